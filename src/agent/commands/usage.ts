/** The help texts: Tollgate's own command line, and ngrok's (what the program answers when run as `ngrok`). */

const NGROK_FORMS = `  tollgate http <addr> [options]                one http tunnel to addr (ngrok's spelling)
  tollgate start --none|--all|NAME... [options] tunnels of the config files (ngrok's spelling)
  tollgate config check [--config FILE]         validate config files (Tollgate's, ngrok v2 or v3)
  tollgate config add-authtoken TOKEN [--config FILE]
  tollgate authtoken TOKEN [--config FILE]      save the credential (the edge's API key) in the config file
  tollgate version                              also --version`;

const OPTIONS_TEXT = `Options:
  --config FILE             config file (YAML; Tollgate's own, or ngrok's version 2 or 3); repeat it or
                            separate files with commas to merge them, later files winning. Default: agent.yml
                            for \`agent start\` and \`agent config check\`, ~/.config/tollgate/agent.yml otherwise
  --server-addr URL         the edge (default http://127.0.0.1:8787, the local \`npm start\`)
  --api-key KEY             API key (default: the development key of \`npm start\`); --authtoken is the same
  --region REGION           accepted and recorded; the edge decides where traffic enters
  --web-addr HOST:PORT      agent API address (default 127.0.0.1:4040; "false" turns it off)
  --log stdout|stderr|false|FILE   where log lines go (\`agent\` forms also take term: the status screen,
                            and logfmt: lines on stdout)
  --log-format logfmt|json|term    log line format (default logfmt)
  --log-level debug|info|warn|error|crit
http only:
  --name NAME               tunnel name (default command_line)
  --subdomain LABEL         public host label wanted (default: a random one)
  --pooling-enabled         share the URL with the account's other tunnels that pool too (load balanced)
  --inspect=false           do not capture requests of this tunnel
  --traffic-policy-file F   traffic policy (YAML or JSON) for the tunnel

Environment: TOLLGATE_SERVER_ADDR and TOLLGATE_API_KEY are used when the flags and config files do not set them.
`;

export const USAGE = `Tollgate local agent: tunnels from the edge to services on this machine.

Usage:
  tollgate agent http <addr> [options]          one http tunnel to addr (port, host:port or URL)
  tollgate agent start [NAME...] [--all] [options]
                                                tunnels of the config file, by name or all
  tollgate agent config check [--config FILE]   validate a config file
${NGROK_FORMS}

${OPTIONS_TEXT}`;

/** What `ngrok --help` shows when this program is started under the name ngrok. */
export const NGROK_USAGE = `Tollgate's agent, started as ngrok: ngrok's command line, tunnels from a Tollgate edge.

Usage:
${NGROK_FORMS.replaceAll("tollgate ", "ngrok ")}

${OPTIONS_TEXT}`;
