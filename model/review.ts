// A reviewer's decision on an item a flag_for_review node stopped: shared by the API that takes it, the workflow
// that holds the item and the activity that applies it.
/** `cancelled`: closed undecided, when its run ended (cancelled or stopped) while the item waited. */
export const reviewStatuses = ['pending', 'accepted', 'rejected', 'sent_on', 'cancelled'] as const;
export const reviewActions = ['accept', 'reject', 'send_to'] as const;

export interface ReviewDecision {
  action: (typeof reviewActions)[number];
  /** accept: the item is done with this output instead of going on from the flag node. */
  output?: Record<string, unknown>;
  /** reject: why (the item fails with it). */
  reason?: string;
  /** send_to: the node the item continues from. */
  node_id?: string;
}
