// A tiny identity provider for trying a team gateway on this machine, and for the SignInTests:
// oidc-provider (npm) on loopback, a client-credentials client per person (alice: engineering,
// bob: sales, both JWT access tokens, RS256 and ES256; carol: engineering, an opaque token that
// mcpstudio asks about by RFC 7662 introspection as the client `gateway`; dana: engineering, with
// client_secret_basic, as the TypeScript SDK's ClientCredentialsProvider authenticates).
//   NODE_PATH=<folder with node_modules/oidc-provider> node idp.mjs RESOURCE KEYS_FILE [ALSO_FILE [EXCHANGE_FILE]]
// ALSO_FILE (read at each token): resources, one a line, that alice's JWTs are issued for too (an
// `aud` of several, as a Keycloak audience mapper makes), for a server of "auth": "passthrough".
// EXCHANGE_FILE (read at each exchange): resources, one a line, that the client `gateway` may get a
// person's token for by an RFC 8693 token exchange, for a server of "auth": "exchange" (oidc-provider
// has no such grant of its own: it is registered here with provider.registerGrantType).
// prints {"issuer": URL} when ready; KEYS_FILE gets its private keys (and a "rogue" one it never
// publishes, with the same kid), so a test can sign tokens it would not issue.
import crypto from "node:crypto";
import fs from "node:fs";
import http from "node:http";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(path.join(process.env.NODE_PATH || process.cwd(), "x.js"));
const { default: Provider, errors } = await import(require.resolve("oidc-provider"));
const [resource, keysFile, alsoFile, exchangeFile] = process.argv.slice(2);
const lines = (file) => (file && fs.existsSync(file) ? fs.readFileSync(file, "utf8").split("\n").filter(Boolean) : []);
const also = () => lines(alsoFile);
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

// RFC 8693 token exchange, for the client `gateway`: a subject token that is one of this provider's access
// tokens, unexpired (a JWT it signed, or an opaque one it keeps), is exchanged for a JWT access token for
// `resource` (one of EXCHANGE_FILE's), naming the same person (`sub`, `groups`) and the gateway as the
// actor (`act`, RFC 8693 4.1). Refusals are RFC 8693's: invalid_grant, invalid_target, invalid_request.
const EXCHANGE = "urn:ietf:params:oauth:grant-type:token-exchange";
const ACCESS = "urn:ietf:params:oauth:token-type:access_token";
const b64 = (value) => Buffer.from(typeof value === "string" ? value : JSON.stringify(value)).toString("base64url");
function verified(token) {
  const [head, body, signature] = token.split(".");
  try {
    const header = JSON.parse(Buffer.from(head, "base64url")), claims = JSON.parse(Buffer.from(body, "base64url"));
    const jwk = { "RS256": keys.rs, "ES256": keys.es }[header.alg];
    const { d, p, q, dp, dq, qi, ...pub } = jwk;
    const ok = crypto.verify("sha256", Buffer.from(head + "." + body), { key: pub, format: "jwk", dsaEncoding: "ieee-p1363" },
                             Buffer.from(signature, "base64url"));
    return ok ? claims : null;
  } catch {
    return null;
  }
}
const exchange = (provider, issuer) => async (ctx) => {
  const { subject_token: subject, subject_token_type: type, resource: wanted } = ctx.oidc.params;
  if (type !== ACCESS) throw new errors.InvalidRequest(`subject_token_type must be ${ACCESS}`);
  const now = Math.floor(Date.now() / 1000);
  let claims = subject && subject.split(".").length === 3 ? verified(subject) : null;
  if (!claims && subject) {
    const kept = await provider.ClientCredentials.find(subject);
    claims = kept && { iss: issuer, sub: kept.clientId, exp: kept.exp, scope: kept.scope, groups: people[kept.clientId] };
  }
  if (!claims || claims.iss !== issuer || !(claims.exp > now)) {
    throw new errors.InvalidGrant("the subject token is not an active access token of this provider");
  }
  if (!wanted || !lines(exchangeFile).includes(wanted)) {
    throw new errors.InvalidTarget(`the gateway may not exchange tokens for ${wanted}`);
  }
  const exp = Math.min(claims.exp, now + 300);
  const payload = { iss: issuer, sub: claims.sub, aud: wanted, iat: now, exp, jti: crypto.randomUUID(),
                    client_id: ctx.oidc.client.clientId, act: { sub: ctx.oidc.client.clientId },
                    groups: claims.groups || people[claims.sub] || [], ...(claims.scope ? { scope: claims.scope } : {}) };
  const signed = b64({ alg: "RS256", typ: "at+jwt", kid: keys.rs.kid }) + "." + b64(payload);
  const signature = crypto.sign("sha256", Buffer.from(signed), { key: keys.rs, format: "jwk" }).toString("base64url");
  ctx.body = { access_token: signed + "." + signature, issued_token_type: ACCESS, token_type: "Bearer",
               expires_in: exp - now };
};

const server = http.createServer();
server.listen(0, "127.0.0.1", () => {
  const issuer = `http://127.0.0.1:${server.address().port}`;
  const provider = new Provider(issuer, {
    clients: [...Object.keys(people).map((id) => client(id, ["client_credentials"])), client("gateway", [EXCHANGE])],
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
  provider.registerGrantType(EXCHANGE, exchange(provider, issuer), ["subject_token", "subject_token_type",
    "requested_token_type", "resource", "audience", "scope"]);
  server.on("request", provider.callback());
  fs.writeFileSync(keysFile, JSON.stringify(keys), { mode: 0o600 });
  console.log(JSON.stringify({ issuer }));
});
