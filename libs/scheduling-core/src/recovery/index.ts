export { planTakeover, type LedgerRelease, type TakeoverDecision, type TakeoverPlan, type TakeoverView } from './takeover';
