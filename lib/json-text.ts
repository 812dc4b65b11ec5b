// An answer that is already its JSON text: a store that can write a page
// as JSON faster than its plants could be serialized (SQLite's and
// PostgreSQL's JSON functions) gives one, and the serializer sends its text
// as it is (serialization.ts). Only a store the service trusts makes one:
// nothing checks the text against the answer's schema.

/** The JSON text of a `T`, ready to send. */
export class JsonText<T = unknown> {
  readonly text: string
  // (Never read: it ties the text to what it is the JSON of, for the types.)
  declare readonly of?: T

  constructor (text: string) {
    this.text = text
  }
}
