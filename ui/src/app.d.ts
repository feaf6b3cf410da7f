// See https://svelte.dev/docs/kit/types#app.d.ts
declare global {
  namespace App {
    interface Error {
      message: string;
      /** An API refusal's per-field problems (its problem+json `errors`), for a form to show at each field. */
      errors?: { path?: string; field?: string; message: string }[];
    }
  }
}

export {};
