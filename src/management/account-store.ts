// PLACEHOLDER until the management API lands (being written now); replaced before commit.
import { DurableObject } from "cloudflare:workers";
export class AccountStore extends DurableObject {}
