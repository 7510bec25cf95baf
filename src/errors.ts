// The errors that end a call with a Fatal result, each with the reason the
// result carries. Their messages are for the user: they name the field and
// what is allowed, and never echo secret values.

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

/** The spec breaks a rule; each problem names its field. Fatal reason InvalidSpec. */
export class SpecError extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
    this.name = 'SpecError';
  }
}

/** No blueprint serves the composite, or the step's input names one that does not exist. Fatal reason UnknownKind. */
export class BlueprintChoiceError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'BlueprintChoiceError';
  }
}
