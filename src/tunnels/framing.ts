/** How frames travel (src/relay/framing.ts), as the Worker's modules name it. */

export { FrameOutbox } from "../relay/framing.ts";
