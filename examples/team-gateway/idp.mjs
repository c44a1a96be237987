// A tiny identity provider for trying a team gateway on this machine, and for the SignInTests:
// oidc-provider (npm) on loopback, a client-credentials client per person (alice: engineering,
// bob: sales, both JWT access tokens, RS256 and ES256; carol: engineering, an opaque token that
// mcpstudio asks about by RFC 7662 introspection as the client `gateway`; dana: engineering, with
// client_secret_basic, as the TypeScript SDK's ClientCredentialsProvider authenticates).
//   NODE_PATH=<folder with node_modules/oidc-provider> node idp.mjs RESOURCE KEYS_FILE [ALSO_FILE]
// ALSO_FILE (read at each token): resources, one a line, that alice's JWTs are issued for too (an
// `aud` of several, as a Keycloak audience mapper makes), for a server of "auth": "passthrough".
// prints {"issuer": URL} when ready; KEYS_FILE gets its private keys (and a "rogue" one it never
// publishes, with the same kid), so a test can sign tokens it would not issue.
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || process.cwd(), "x.js"));
const Provider = (await import(require.resolve("oidc-provider"))).default;
const [resource, keysFile, alsoFile] = process.argv.slice(2);
const also = () => (alsoFile && fs.existsSync(alsoFile) ? fs.readFileSync(alsoFile, "utf8").split("\n").filter(Boolean) : []);
const jwk = (pair, kid, alg) => ({ ...pair.privateKey.export({ format: "jwk" }), kid, alg, use: "sig" });
const keys = {
  rs: jwk(crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }), "rs-1", "RS256"),
  es: jwk(crypto.generateKeyPairSync("ec", { namedCurve: "P-256" }), "es-1", "ES256"),
  rogue: jwk(crypto.generateKeyPairSync("rsa", { modulusLength: 2048 }), "rs-1", "RS256"),
};
const people = { alice: ["engineering"], bob: ["sales"], carol: ["engineering"], dana: ["engineering"] };
const client = (id, grants) => ({
  client_id: id, client_secret: `${id}-secret`, grant_types: grants, redirect_uris: [], response_types: [],
  token_endpoint_auth_method: id === "dana" ? "client_secret_basic" : "client_secret_post",  // dana: an SDK's client
});
const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [...Object.keys(people).map((id) => client(id, ["client_credentials"])), client("gateway", [])],
    jwks: { keys: [keys.rs, keys.es] },
    features: {
      devInteractions: { enabled: false },
      clientCredentials: { enabled: true },
      introspection: { enabled: true, allowedPolicy: () => true },
      resourceIndicators: {
        enabled: true,
        defaultResource: () => resource,
        useGrantedResource: () => true,
        getResourceServerInfo: (ctx, indicator, c) => ({
          scope: "tools", audience: indicator, accessTokenTTL: 300,
          accessTokenFormat: c.clientId === "carol" ? "opaque" : "jwt",
          jwt: { sign: { alg: c.clientId === "bob" ? "ES256" : "RS256" } },
        }),
      },
    },
    extraTokenClaims: (ctx, token) => ({ groups: people[token.clientId] || [] }),
    formats: {
      customizers: {
        jwt: (ctx, token, jwt) => {
          if (token.clientId === "alice" && also().length) jwt.payload.aud = [jwt.payload.aud, ...also()];
        },
      },
    },
  });
  server.on("request", provider.callback());
  fs.writeFileSync(keysFile, JSON.stringify(keys), { mode: 0o600 });
  console.log(JSON.stringify({ issuer }));
});
