// The plans of the spec (§8) and what each allows. Pure: the store counts against them, the API shows them and the
// plan-change workflow carries them.
export type Plan = 'free' | 'professional' | 'enterprise';

export const plans: Plan[] = ['free', 'professional', 'enterprise'];

/** Plan allowances from the spec (§8): runs a month and agents per workspace; null is unlimited. */
export const planLimits: Record<Plan, { runsPerMonth: number | null; agents: number | null }> = {
  free: { runsPerMonth: 100, agents: 3 },
  professional: { runsPerMonth: 1_000, agents: null },
  enterprise: { runsPerMonth: null, agents: null },
};
