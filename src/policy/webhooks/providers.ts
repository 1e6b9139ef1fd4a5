/** The webhook providers `verify-webhook` knows, by ngrok's identifiers, and the ones of ngrok's it does not. */

import { github } from "./github.ts";
import { gitlab } from "./gitlab.ts";
import type { WebhookScheme } from "./scheme.ts";
import { shopify } from "./shopify.ts";
import { slack } from "./slack.ts";
import { stripe } from "./stripe.ts";
import { svix } from "./svix.ts";
import { twilio } from "./twilio.ts";

export const webhookSchemes: ReadonlyMap<string, WebhookScheme> = new Map(
  [github, gitlab, shopify, slack, stripe, svix, twilio].map((scheme) => [scheme.provider, scheme]),
);

/** ngrok's other provider identifiers: named in the load error, so an ngrok policy learns why it does not load. */
export const NGROK_ONLY_PROVIDERS: ReadonlySet<string> = new Set([
  "aftership",
  "airship",
  "alchemy",
  "sns",
  "autodesk",
  "bitbucket",
  "bolt",
  "box",
  "brex",
  "buildkite",
  "calendly",
  "castle",
  "chargify",
  "circleci",
  "clearbit",
  "clerk",
  "coinbase",
  "contentful",
  "docusign",
  "dropbox",
  "facebook_graph_api",
  "facebook_messenger",
  "frameio",
  "go1",
  "heroku",
  "hostedhooks",
  "hubspot",
  "graphcms",
  "instagram",
  "intercom",
  "jira",
  "launch_darkly",
  "linear",
  "mailchimp",
  "mailgun",
  "microsoft_teams",
  "modern_treasury",
  "mongodb",
  "mux",
  "orb",
  "orbit",
  "pagerduty",
  "pinwheel",
  "plivo",
  "pusher",
  "sendgrid",
  "sentry",
  "signal_sciences",
  "sonatype",
  "square",
  "terraform",
  "tiktok",
  "trendmicro_conformity",
  "twitter",
  "typeform",
  "vmware",
  "webex",
  "whatsapp",
  "worldline",
  "xero",
  "zendesk",
  "zoom",
]);
