// Preloaded (--import) into every baseline and the peer: they hold a
// nextTick record as the service's command does (lib/tick-shape.ts), so that
// none of them runs in V8's slow state for those records and the
// comparison is of the work each does per request.
import { holdTickShape } from '../../lib/tick-shape.ts'

holdTickShape()
