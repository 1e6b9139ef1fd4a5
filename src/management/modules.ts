/**
 * HTTPS edge route modules: their schemas (validation and OpenAPI), defaults and types. Shared by the
 * management routes that store them and the gateway that applies them.
 */

import { z } from "@hono/zod-openapi";

export const UINT32_MAX = 4_294_967_295;

const enabled = z
  .boolean({ error: "must be true or false" })
  .default(true)
  .openapi({ description: "`true` if the module applies to the route's traffic, `false` to keep it stored but off. Default `true`." });

function integer(min: number, max: number, fallback: number, description: string) {
  return z
    .int({ error: `must be an integer from ${min} to ${max}` })
    .min(min, `must be an integer from ${min} to ${max}`)
    .max(max, `must be an integer from ${min} to ${max}`)
    .default(fallback)
    .openapi({ description: `${description} ${min} … ${max}; default ${fallback}.` });
}

export const circuitBreakerSchema = z
  .strictObject({
    enabled,
    tripped_duration: integer(1, UINT32_MAX, 10, "Seconds the circuit stays open once tripped, before a request may test the upstream again."),
    rolling_window: integer(1, UINT32_MAX, 10, "Seconds of upstream results the error percentage is computed over."),
    num_buckets: integer(1, 128, 10, "Buckets the rolling window is divided into."),
    volume_threshold: integer(0, UINT32_MAX, 20, "Requests the rolling window must hold before the circuit can trip."),
    error_threshold_percentage: z
      .number({ error: "must be a number from 0 to 1" })
      .min(0, "must be a number from 0 to 1")
      .max(1, "must be a number from 0 to 1")
      .default(0.5)
      .openapi({ description: "Fraction (0 … 1.0, not a percentage) of failed requests in the window that trips the circuit; default 0.5." }),
  })
  .openapi("CircuitBreakerModule", { description: "Circuit breaker of an HTTPS edge route." });

export const websocketTcpConverterSchema = z
  .strictObject({ enabled })
  .openapi("WebsocketTcpConverterModule", { description: "Converts WebSocket connections on the route into TCP streams to the route's upstream." });

export type CircuitBreakerModule = z.output<typeof circuitBreakerSchema>;
export type WebsocketTcpConverterModule = z.output<typeof websocketTcpConverterSchema>;

/** The modules a route can have, by the path segment that names them. */
export const MODULE_SCHEMAS = {
  circuit_breaker: circuitBreakerSchema,
  websocket_tcp_converter: websocketTcpConverterSchema,
} as const;

export type ModuleKind = keyof typeof MODULE_SCHEMAS;

export const MODULE_KINDS = Object.keys(MODULE_SCHEMAS) as ModuleKind[];

/** The modules stored for one route; a kind is absent when none is set. */
export interface RouteModules {
  circuit_breaker?: CircuitBreakerModule;
  websocket_tcp_converter?: WebsocketTcpConverterModule;
}
