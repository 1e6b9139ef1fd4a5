/** How frames travel (src/relay/framing.ts), as the Worker's modules name it. */

export { DataSequence, FrameOutbox, OrderedReceiver, type OrderedSink } from "../relay/framing.ts";
