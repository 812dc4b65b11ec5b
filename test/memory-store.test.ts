import t from 'tap'
import { MemoryStore } from '../lib/plugin.ts'
import { storeSuite } from './store-suite.ts'

storeSuite(t, async () => new MemoryStore())
