// The spec's routes repeat a few schemas many times (every route's Error
// answers, the id parameter): the plugin's validator and serializer
// compilers compile each distinct one once and hand the same function to
// every copy. (Neither keeps state between calls.)

/** A key that is the same for schemas of the same content. (Bounds are bigints in int64 schemas.) */
export function schemaKey (schema: unknown): string {
  return JSON.stringify(schema, (_key, value: unknown) => typeof value === 'bigint' ? `${value}n` : value)
}

/** `compile`, called once per distinct `keyOf(route)` (and given it); later calls with the same key get the same result. */
export function compileOnce<R, F> (keyOf: (route: R) => string, compile: (route: R, key: string) => F): (route: R) => F {
  const compiled = new Map<string, F>()
  return (route) => {
    const key = keyOf(route)
    let result = compiled.get(key)
    if (result === undefined) {
      result = compile(route, key)
      compiled.set(key, result)
    }
    return result
  }
}
