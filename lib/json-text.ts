// An answer that is already its JSON text: a store that can write a page
// as JSON faster than its plants could be serialized (SQLite's and
// PostgreSQL's JSON functions) gives one, and the operation's handler sends
// its text as the answer (operations.ts). Only a store the service trusts
// makes one: nothing checks the text against the answer's schema.

/** The JSON text of a `T`, ready to send. */
export class JsonText<T = unknown> {
  // (A private field makes the class nominal: a plain `{ text }` is no JsonText.)
  readonly #text: string
  // (Never read: it ties the text to what it is the JSON of, for the types.)
  declare readonly of?: T

  constructor (text: string) {
    this.#text = text
  }

  get text (): string {
    return this.#text
  }
}
