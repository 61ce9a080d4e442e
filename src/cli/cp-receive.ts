import { parentPort, workerData } from 'node:worker_threads';
import { PodctlError } from '../core/errors.js';
import { streamExec } from '../core/exec/stream.js';
import { Extraction, TarError } from '../core/exec/tar.js';
import { collectText, localFsError, type ReceiveJob, type ReceiveResult } from './cp.js';

/**
 * The worker that receives a copy from a pod (see copyFromPod): the container's `tar cf -` read
 * from the exec stream and unpacked as it arrives, then its one answer posted back.
 */
export async function receive(job: ReceiveJob): Promise<ReceiveResult> {
  let extraction: Extraction | undefined;
  try {
    extraction = await Extraction.open(job.destDir, job.rename);
    const stderr = collectText();
    const exitCode = await streamExec(job.url, { stdout: extraction.input, stderr: stderr.stream });
    if (exitCode !== 0) {
      return { refused: { message: `cp: tar in the container exited ${exitCode}: ${stderr.text().trim() || 'no message'}`, exitCode: 1 } };
    }
    await extraction.finish();
    return { done: true };
  } catch (err) {
    if (err instanceof TarError) return { refused: { message: `cp: ${err.message}`, exitCode: 1 } };
    const refusal = err instanceof PodctlError ? err : localFsError(err, job.destDir);
    if (refusal) return { refused: { message: refusal.message, hint: refusal.hint, exitCode: refusal.exitCode } };
    return { error: { message: (err as Error).message, stack: (err as Error).stack } };
  } finally {
    await extraction?.discard();
  }
}

if (parentPort) {
  const port = parentPort;
  receive(workerData as ReceiveJob).then(
    (result) => port.postMessage(result),
    (err: Error) => port.postMessage({ error: { message: err.message, stack: err.stack } } satisfies ReceiveResult),
  );
}
