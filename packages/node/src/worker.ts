/**
 * Entry of a pool worker process: serves engine jobs from the parent over IPC.
 * Started by `createWorkerPool()`, never by hand.
 */
import { startWorker } from './pool/start-worker.ts';

startWorker();
