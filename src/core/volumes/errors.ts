/** A volume that cannot be set up or mounted; message in the kubelet's words, naming the volume. */
export class VolumeError extends Error {
  override readonly name = 'VolumeError';
  constructor(
    readonly volume: string,
    /** The event reason the kubelet would record: FailedMount for set-up, CreateContainerConfigError for mounts. */
    readonly reason: string,
    message: string,
    /** The cause alone, without the kubelet's "MountVolume.SetUp failed ..." prefix. */
    readonly detail: string = message,
  ) {
    super(message);
  }
}

/** The kubelet's FailedMount event text: MountVolume.SetUp failed for volume "x" : <cause>. */
export function setUpError(volume: string, detail: string): VolumeError {
  return new VolumeError(volume, 'FailedMount', `MountVolume.SetUp failed for volume "${volume}" : ${detail}`, detail);
}

/** Thrown by payload builders before the volume's name is known to them; the manager rewraps it. */
export class PayloadError extends Error {
  override readonly name = 'PayloadError';
}
