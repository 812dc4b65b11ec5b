// A Swagger UI plugin, run in the browser: Swagger UI pretty-prints a JSON
// answer with JSON.parse and JSON.stringify, which round integers past
// 2^53 (9007199254740995 became 9007199254740996 on the page). This one
// re-indents the answer's text token by token instead, never reading a
// number, and hands it to Swagger UI's own component to show as text.
//
// It is sent to the browser as its source text (@fastify/swagger-ui
// serializes functions in `uiConfig`), so it must close over nothing and
// use nothing but what a browser has.

interface ResponseBodyProps { content?: unknown, contentType?: string, [key: string]: unknown }
interface SwaggerSystem { React: { createElement: (component: unknown, props: ResponseBodyProps) => unknown } }

export function losslessJsonPlugin () {
  // JSON text indented by two spaces per level, its tokens as they were.
  function indentJson (text: string): string {
    let out = ''
    let depth = 0
    let inString = false
    const newline = () => '\n' + '  '.repeat(depth)
    for (let i = 0; i < text.length; i++) {
      const char = text[i]!
      if (inString) {
        out += char
        if (char === '\\') out += text[++i] ?? ''
        else if (char === '"') inString = false
      } else if (char === '"') {
        out += char
        inString = true
      } else if (char === '{' || char === '[') {
        const close = char === '{' ? '}' : ']'
        let next = i + 1
        while (/\s/.test(text[next] ?? '')) next++
        if (text[next] === close) { // empty: {} or []
          out += char + close
          i = next
        } else {
          depth++
          out += char + newline()
        }
      } else if (char === '}' || char === ']') {
        depth--
        out += newline() + char
      } else if (char === ',') {
        out += ',' + newline()
      } else if (char === ':') {
        out += ': '
      } else if (!/\s/.test(char)) {
        out += char
      }
    }
    return out
  }
  return {
    wrapComponents: {
      responseBody: (Original: unknown, system: SwaggerSystem) => (props: ResponseBodyProps) =>
        typeof props.content === 'string' && /json/i.test(props.contentType ?? '')
          ? system.React.createElement(Original, { ...props, content: indentJson(props.content), contentType: 'text/plain' })
          : system.React.createElement(Original, props)
    }
  }
}
