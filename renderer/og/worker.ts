/** Entry of a drawing thread (pool.ts): faces and grounds load once, then cards are drawn. */
import { drawCard, warmUp } from './draw.ts';
import { takeMissing } from './typeset/shape.ts';
import { serveDrawing } from './worker-protocol.ts';

serveDrawing(warmUp, drawCard, takeMissing);
