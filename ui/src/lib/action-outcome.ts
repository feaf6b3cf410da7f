// The console's own shape, not the API's: what every form action answers, so one notice component can show it.
export interface ActionOutcome {
  ok: boolean;
  message: string;
}
