// Checks an answer against what the spec declares for its operation and
// status; answers of no operation (unknown routes) must be an Error.
import { Ajv2020 } from 'ajv/dist/2020.js'
import addFormatsModule from 'ajv-formats'
import type { ValidateFunction } from 'ajv'
import { loadSpec } from '../lib/spec.ts'

const addFormats = addFormatsModule as unknown as typeof addFormatsModule.default

const spec = await loadSpec()
const ajv = new Ajv2020({ strict: false })
addFormats(ajv)
// The whole document goes in, so that the spec's own $refs resolve.
ajv.addSchema({ ...spec, $id: 'spec' })

const validators = new Map<string, ValidateFunction | null>()

function pointer (...parts: string[]): string {
  return 'spec#/' + parts.map((part) => part.replaceAll('~', '~0').replaceAll('/', '~1')).join('/')
}

function responseSchemaRef (operationId: string | undefined, status: number): string | null {
  if (operationId === undefined) return status >= 400 ? pointer('components', 'schemas', 'Error') : null
  for (const [path, item] of Object.entries(spec.paths ?? {})) {
    for (const [method, operation] of Object.entries(item)) {
      if (operation?.operationId !== operationId) continue
      let response = operation.responses?.[String(status)] as { $ref?: string, content?: Record<string, unknown> } | undefined
      if (response === undefined) return 'undeclared'
      let base = pointer('paths', path, method, 'responses', String(status))
      if (response.$ref) {
        base = 'spec' + response.$ref
        const name = response.$ref.split('/').pop()!
        response = (spec.components as { responses: Record<string, typeof response> }).responses[name]
      }
      if (response?.content?.['application/json']) return `${base}/content/application~1json/schema`
      // A text answer (metrics): any text is its shape.
      return response?.content !== undefined ? 'text' : null
    }
  }
  throw new Error(`no operation ${operationId} in the spec`)
}

/**
 * The problems of one answer: an empty list when it has the shape the spec
 * declares for its operation and status.
 */
export function contractProblems (operationId: string | undefined, status: number, body: string): string[] {
  const key = `${operationId} ${status}`
  if (!validators.has(key)) {
    const ref = responseSchemaRef(operationId, status)
    if (ref === 'undeclared') return [`status ${status} is not declared for ${operationId}`]
    if (ref === 'text') return []
    validators.set(key, ref === null ? null : ajv.getSchema(ref) ?? null)
    if (ref !== null && !validators.get(key)) throw new Error(`cannot resolve ${ref}`)
  }
  const validate = validators.get(key)
  if (!validate) return body === '' ? [] : [`${key}: the spec declares no body`]
  let data: unknown
  try {
    data = JSON.parse(body)
  } catch {
    return [`${key}: the body is not JSON: ${body.slice(0, 80)}`]
  }
  return validate(data) ? [] : (validate.errors ?? []).map((e) => `${key}: ${e.instancePath} ${e.message}`)
}
