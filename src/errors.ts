/** An error whose message the user should read as is, on a Fatal result. */
export class FatalError extends Error {
  constructor(
    message: string,
    readonly reason = 'InvalidRequest',
  ) {
    super(message);
    this.name = 'FatalError';
  }
}
