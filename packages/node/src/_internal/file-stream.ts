import { open } from 'node:fs/promises';
import type { FileHandle } from 'node:fs/promises';

/** Bytes read from disk per chunk. */
export const FILE_CHUNK_BYTES = 64 * 1024;

/**
 * An open file as a web `ReadableStream`, read one chunk per pull (so a slow consumer holds at
 * most one chunk ahead). The handle is closed at the end, on error and on cancel.
 */
export function fileStream(handle: FileHandle): ReadableStream<Uint8Array> {
  let closed = false;
  const close = async (): Promise<void> => {
    if (closed) return;
    closed = true;
    await handle.close();
  };
  return new ReadableStream<Uint8Array>({
    async pull(controller) {
      try {
        const buffer = new Uint8Array(FILE_CHUNK_BYTES);
        const { bytesRead } = await handle.read(buffer, 0, FILE_CHUNK_BYTES, null);
        if (bytesRead === 0) {
          await close();
          controller.close();
          return;
        }
        controller.enqueue(bytesRead === FILE_CHUNK_BYTES ? buffer : buffer.subarray(0, bytesRead));
      } catch (error) {
        await close().catch(() => undefined);
        controller.error(error);
      }
    },
    cancel: close,
  });
}

/** Writes all of `bytes` at the handle's position (a write may take fewer bytes than given). */
export async function writeAll(handle: FileHandle, bytes: Uint8Array): Promise<void> {
  let offset = 0;
  while (offset < bytes.byteLength) {
    const { bytesWritten } = await handle.write(bytes, offset, bytes.byteLength - offset);
    offset += bytesWritten;
  }
}

/** Writes `body` to a new file at `path` (never replacing one); returns its size in bytes. */
export async function writeStreamToFile(
  body: ReadableStream<Uint8Array>,
  path: string,
): Promise<number> {
  const handle = await open(path, 'wx', 0o600);
  const reader = body.getReader();
  let sizeBytes = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      await writeAll(handle, value);
      sizeBytes += value.byteLength;
    }
  } catch (error) {
    await reader.cancel().catch(() => undefined);
    throw error;
  } finally {
    reader.releaseLock();
    await handle.close();
  }
  return sizeBytes;
}
