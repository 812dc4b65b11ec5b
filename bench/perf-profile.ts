// Where a request's CPU goes, sampled by Linux's perf: every thread of a
// server over one load, its JavaScript named through the map Node writes
// for perf (`--perf-basic-prof-only-functions`). Unlike callgrind's count,
// it sees the kernel's share (the network stack, the syscalls, waking the
// client), and it runs at full speed.
import { execFile, spawn } from 'node:child_process'
import { once } from 'node:events'
import { rm, writeFile } from 'node:fs/promises'
import { basename, relative } from 'node:path'
import { setTimeout } from 'node:timers/promises'
import { promisify } from 'node:util'
import { WRITER_THREAD_NAME } from '../lib/stores/sqlite-writer.ts'
import { threadComm } from './cores.ts'

/** Samples per second of each thread's CPU time: one stands for 1/PERF_HZ s. */
export const PERF_HZ = 999
/** What the sampled server's Node needs (NODE_OPTIONS), so that perf can name its JavaScript. */
export const PERF_NODE_OPTIONS = '--perf-basic-prof-only-functions'

/** Where samples fell, in the order the report shows them. */
export const CATEGORIES = {
  kernel: 'kernel',
  javascript: 'JavaScript',
  runtime: 'V8 runtime',
  gc: 'garbage collector',
  compiler: 'JIT compiler',
  node: 'Node\'s C++',
  libraries: 'libraries'
} as const
export type Category = keyof typeof CATEGORIES

/** Samples by where they fell. */
export interface CpuSplit {
  by: Record<Category, number>
  /**
   * Of the kernel's, those in a send that makes the other end's socket
   * readable and wakes whoever waits on it (over loopback, the load
   * generator, a webhook receiver, PostgreSQL): the cost of the peer
   * being on this machine, and the more often it sleeps, the more.
   */
  wakeups: number
  /**
   * The samples by thread: the main thread's (the event loop: HTTP,
   * Fastify, the service), the SQLite writer's (its thread's JavaScript,
   * SQLite, the commits' writes and fsyncs); the rest (V8's helpers,
   * libuv's pool) are the total less these.
   */
  threads: { main: number, writer: number }
  /** The JavaScript's samples (the JIT's code alone) by where its code comes from, largest first. */
  sources: Array<[string, number]>
}

// Node's and V8's own code, by symbol: the garbage collector's, the
// compilers', Node's C++ (HTTP parser, libuv, streams, and the SQLite and
// OpenSSL built into it); V8's builtins run
// for the JavaScript that calls them (property lookups, Map, promises), so
// they count as JavaScript; the rest is V8's runtime (JSON, strings, calls
// into C++).
const GC = /v8::internal::(Heap|Scaveng|MarkCompact|Marking|ConcurrentMarking|MainMarking|Minor|Sweeper|Evacuat|IncrementalMarking|MemoryAllocator|MemoryReducer|ArrayBufferSweeper|GlobalHandles|PagedSpace|SemiSpace|NewSpace|LargeObjectSpace|YoungGeneration|Full|Young|Remembered|SlotSet|Typed)|heap::base|cppgc/
const COMPILER = /v8::internal::(compiler|maglev|baseline|interpreter|Parser|Compiler|OptimizingCompileDispatcher|Zone|Bytecode|Scanner|AstValue|DeclarationScope|Scope::)|turboshaft/
const NODE = /^\[\.\] (non-virtual thunk to )?(node::|llhttp|uv_|simdutf|std::.*node::|sqlite3|ossl_|OPENSSL_|CRYPTO_|EVP_|HMAC|SHA|sha\d|ares_|nghttp)/

function categoryOf (dso: string, symbol: string, node: string): Category {
  if (dso.startsWith('[kernel')) return 'kernel'
  if (dso.startsWith('[JIT]') || /perf-\d+\.map$/.test(dso)) return 'javascript'
  if (dso !== node) return 'libraries'
  if (symbol.startsWith('[.] Builtins_')) return 'javascript'
  if (GC.test(symbol)) return 'gc'
  if (COMPILER.test(symbol)) return 'compiler'
  if (NODE.test(symbol)) return 'node'
  return 'runtime'
}

/** Every sample of a split. */
export function totalOf ({ by }: CpuSplit): number {
  return Object.values(by).reduce((sum, samples) => sum + samples, 0)
}

/** Samples as microseconds of CPU per request, over `requests` requests. */
export function microseconds (samples: number, requests: number): number {
  return samples * 1e6 / PERF_HZ / requests
}

/** Starts sampling process `pid`; the function returned stops it, once the file is written. */
export async function recordPerf (pid: number, file: string): Promise<() => Promise<void>> {
  // (Call chains, for WAKING: the kernel's are whole whatever user space does.)
  const perf = spawn('perf', ['record', '-q', '-g', '-F', String(PERF_HZ), '-p', String(pid), '-o', file], { stdio: 'ignore' })
  const exited = once(perf, 'exit')
  // (perf starts sampling a moment after it starts: the load waits for it.)
  await setTimeout(300)
  return async () => {
    perf.kill('SIGINT')
    await exited
  }
}

// Where a JavaScript function's code comes from, by the URL perf's map
// names it with (`JS:*'name file:///…/x.js:1:2`): a package, Node's own
// modules, or a directory of this repository.
function sourceOf (symbol: string, root: string): string {
  const url = /\s((?:file:\/\/|\/|node:)\S*?)(?::\d+:\d+)?$/.exec(symbol)?.[1]
  if (url === undefined) return 'unnamed'
  if (url.startsWith('node:')) return 'Node\'s own JavaScript'
  const path = url.replace(/^file:\/\//, '')
  const inPackage = /.*\/node_modules\/((?:@[^/]+\/)?[^/]+)\//.exec(path)
  if (inPackage !== null) return inPackage[1]!
  const local = relative(root, path)
  return local.startsWith('..') ? 'unnamed' : local.split('/').slice(0, -1).join('/') || local
}

// A send over loopback delivers to the other end's socket within the
// sender's syscall; the function that makes that socket readable, and
// wakes its waiter, is the mark of the wake-up in a sample's call chain
// (perf's `parent` of the sample).
const WAKING = 'sock_def_readable'

const WRITER_COMM = threadComm(WRITER_THREAD_NAME)

/**
 * What perf recorded in `file`, split by where the samples fell; `root` is
 * the repository, whose directories name the service's own JavaScript
 * (dist/lib) and the baselines' (bench/systems). With `report`, the full
 * list by symbol is written there too. Run before the map of the sampled
 * process (/tmp/perf-PID.map) is gone: `forget` removes it.
 *
 * One pass of `perf report` gives every sample's thread (as perf's `pid`
 * column writes it, `id:name`: the main thread's id is the process's, the
 * SQLite writer is found by its name), its symbol and whether its call
 * chain passes through WAKING.
 */
export async function splitPerf (file: string, pid: number, root: string, report?: string): Promise<CpuSplit> {
  const node = basename(process.execPath)
  const split: CpuSplit = { by: { kernel: 0, javascript: 0, runtime: 0, gc: 0, compiler: 0, node: 0, libraries: 0 }, wakeups: 0, threads: { main: 0, writer: 0 }, sources: [] }
  const sources = new Map<string, number>()
  const symbols = new Map<string, number>()
  const { rows, output } = await samplesBy(file, 'pid,dso,sym,parent', '-p', `^${WAKING}$`)
  let named = 0
  for (const { samples, values: [thread, dso, symbol, parent] } of rows) {
    const id = /^(\d+):(.*)$/.exec(thread!)
    if (id !== null) {
      named++
      if (Number(id[1]) === pid) split.threads.main += samples
      else if (id[2] === WRITER_COMM) split.threads.writer += samples
    }
    if (parent === WAKING) split.wakeups += samples
    const category = categoryOf(dso!, symbol!, node)
    split.by[category] += samples
    if (category === 'javascript' && !symbol!.startsWith('[.] Builtins_')) {
      const source = sourceOf(symbol!, root)
      sources.set(source, (sources.get(source) ?? 0) + samples)
    }
    const key = `${dso}\t${symbol}`
    symbols.set(key, (symbols.get(key) ?? 0) + samples)
  }
  // (perf may refuse a sort key and still exit 0: a split without threads is no split.)
  if (named === 0) throw new Error(`perf report gave no thread of process ${pid}; it wrote: ${output.slice(0, 2000) || 'nothing'}`)
  split.sources = [...sources].sort((a, b) => b[1] - a[1])
  if (report !== undefined) await writeFile(report, [...symbols].sort((a, b) => b[1] - a[1]).map(([key, samples]) => `${samples}\t${key}`).join('\n') + '\n')
  return split
}

// perf's report of `file` by its sort keys: each row's samples and the
// keys' values, and what perf wrote (a refused key goes to its stderr).
interface ReportRow { samples: number, values: string[] }
async function samplesBy (file: string, keys: string, ...options: string[]): Promise<{ rows: ReportRow[], output: string }> {
  const { stdout, stderr } = await promisify(execFile)('perf', ['report', '-i', file, '--no-children', '--sort', keys, ...options, '-F', `sample,${keys}`, '--stdio', '-q', '-g', 'none', '-t', '\t'],
    { maxBuffer: 256 * 1024 * 1024 })
  const width = keys.split(',').length
  const rows = stdout.split('\n').flatMap((line): ReportRow[] => {
    const [count, ...values] = line.split('\t').map((part) => part.trim())
    const samples = Number(count)
    return values.length >= width && Number.isFinite(samples) ? [{ samples, values }] : []
  })
  return { rows, output: stdout + stderr }
}

/** Removes the map Node wrote for perf. */
export async function forget (pid: number): Promise<void> {
  await rm(`/tmp/perf-${pid}.map`, { force: true })
}
