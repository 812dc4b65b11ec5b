// The spec's component schemas with their $refs resolved, for the baselines
// that validate "with the same JSON schemas" without fastify-openapi-glue.
import { loadSpec } from '../../lib/spec.ts'

const spec = await loadSpec()
const components = (spec.components as { schemas: Record<string, unknown> }).schemas

function resolve (node: unknown): unknown {
  if (Array.isArray(node)) return node.map(resolve)
  if (typeof node !== 'object' || node === null) return node
  const { $ref, ...rest } = node as Record<string, unknown>
  if (typeof $ref === 'string') return resolve(components[$ref.split('/').pop()!])
  return Object.fromEntries(Object.entries(rest).map(([key, value]) => [key, resolve(value)]))
}

export const schemas = {
  NewPlant: resolve(components.NewPlant) as object,
  Plant: resolve(components.Plant) as object,
  StoredPlant: resolve(components.StoredPlant) as object
}

export const SPEC_PATH = new URL('../../spec/plant-store.yaml', import.meta.url)

/** Tells the bench the port is open. */
export function announce (port: number): void {
  process.stdout.write(`listening on ${port}\n`)
}
