// Imported first by every entry point: on a Node.js release this package
// does not run on, one sentence says so, rather than whichever newer
// feature happens to be missing first (node:sqlite, JSON.rawJSON…).

/** The oldest Node.js major release the package runs on (package.json engines). */
const MINIMUM_NODE_MAJOR = 24

/** Why this Node.js cannot run the package, or undefined when it can. */
export function unsupportedNode (version = process.versions.node): string | undefined {
  const major = Number(version.split('.')[0])
  return major >= MINIMUM_NODE_MAJOR
    ? undefined
    : `plant-store needs Node.js ${MINIMUM_NODE_MAJOR} or newer; this is Node.js ${version}`
}

const problem = unsupportedNode()
if (problem !== undefined) throw new Error(problem)
