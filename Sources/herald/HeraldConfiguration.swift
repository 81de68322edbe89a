import Foundation
import HeraldCore
import HeraldHub
import HeraldPostgres
import HeraldStore
import Logging

/// Everything `herald` can be told, read in one place: command-line flags override
/// `HERALD_*` environment variables, which override the config file (JSON, flat keys named
/// like the variables without `HERALD_` and in lower case), which overrides the defaults.
struct HeraldConfiguration: Sendable {
    var host = "127.0.0.1"
    var port = 8080
    var dataDirectory = "./herald-data"
    /// The PostgreSQL database that keeps every hub instead of the data directory, for several
    /// nodes; `nil` for the data directory.
    var databaseURL: DatabaseURL?
    /// The most connections to the database this node opens.
    var databaseConnections = 20
    /// How long a delivery lease lasts: after a node dies, another resumes its notification
    /// within this (a live node renews its leases every quarter of it).
    var deliveryLeaseSeconds = 10
    var deliveryPartitionSize = HubEngine.Configuration().partitionSize
    /// Devices read and sent per page: a crashed node's page in flight is sent again.
    var deliveryPageSize = HubEngine.Configuration().pageSize
    var logLevel: Logger.Level = .info
    /// `text` (human-readable) or `json` (one object per line).
    var logFormat = "text"
    var insecureDemoAuth = false
    var allowSignUp = true
    var tokenLifetimeSeconds = 7 * 24 * 3600
    var bcryptCost = 12
    var publicURL: String?
    var secureRetentionSeconds = 7 * 24 * 3600
    /// The file of the key that seals secure payloads, handed to every node (a mounted secret);
    /// `nil`: `<data-dir>/keys/secure-payload.key`, created if missing.
    var securePayloadKeyFile: String?
    var richMaxBytes = 10 * 1024 * 1024
    /// The HTTPS port of the hub REST API (the cloud hub's SDKs speak HTTPS only); 0 turns TLS off.
    var tlsPort = 8443
    /// Certificate chain (PEM) served on ``tlsPort``.
    var tlsCertFile: String?
    /// Private key (PEM) of ``tlsCertFile``.
    var tlsKeyFile: String?
    /// The endpoint printed in hub connection strings, overriding `sb://localhost:<tlsPort>/`.
    var hubEndpoint: String?

    struct APNs: Sendable {
        var keyFile: String?
        var keyID: String?
        var teamID: String?
        var topic: String?
        var environment = "production"
        var endpoint: String?
        /// `HERALD_APNS_BROADCAST_ENDPOINT`: the broadcast channel management API, overriding the environment's.
        var broadcastEndpoint: String?
        var caFile: String?
        var connections = 4
        /// Certificate authentication: a `.p12` file or a PEM certificate (with its key in the
        /// same file, or in ``certKeyFile``).
        var certFile: String?
        /// The password of a `.p12` ``certFile``.
        var certPassword: String?
        /// The PEM private key of a PEM ``certFile``.
        var certKeyFile: String?
        var usesToken: Bool { keyFile != nil || keyID != nil || teamID != nil }
        var usesCertificate: Bool { certFile != nil || certPassword != nil || certKeyFile != nil }
        var isConfigured: Bool { usesToken || usesCertificate }
    }
    var apns = APNs()

    struct FCM: Sendable {
        var serviceAccountFile: String?
        var endpoint: String?
        var tokenURI: String?
        var caFile: String?
        var isConfigured: Bool { serviceAccountFile != nil }
    }
    var fcm = FCM()

    struct WNS: Sendable {
        var packageSID: String?
        var clientSecret: String?
        var tokenURI: String?
        var caFile: String?
        /// The hosts channel URIs may name (default: Microsoft's, `*.notify.windows.com`).
        var allowedHosts: HostAllowList = .wns
        var isConfigured: Bool { packageSID != nil || clientSecret != nil }
    }
    var wns = WNS()

    struct WebPush: Sendable {
        /// The VAPID contact (`mailto:` or `https:`); setting it turns on delivery to real push services.
        var subject: String?
        var vapidKeyFile: String?
        var caFile: String?
        /// The hosts subscriptions may name (default: the major browsers' push services).
        var allowedHosts: HostAllowList = .webPushServices
        var isConfigured: Bool { subject != nil }
    }
    var webPush = WebPush()

    /// How hubs post webhook events to app backends.
    struct Webhooks: Sendable {
        /// The hosts endpoint URLs may name (default: any).
        var allowedHosts: HostAllowList = .anyHost
        /// The hosts endpoint URLs may reach over plain http (default: none).
        var plainHTTPHosts: HostAllowList = []
        var caFile: String?
        var timeoutSeconds = 10
    }
    var webhooks = Webhooks()

    /// `auto`: start the built-in emulators for platforms without credentials;
    /// `off`: leave those platforms unconfigured.
    /// The hub the app backend registers devices with, through the hub REST API; `nil` for
    /// Herald's own in-process hub.
    var appHubConnectionString: String?
    var appHubName: String?

    /// The hub of this server's catalog that keeps the app backend's accounts and content, and
    /// its devices unless they live in a remote hub.
    var localAppHubName: String {
        appHubConnectionString == nil ? appHubName ?? HubCatalog.defaultAppHubName : HubCatalog.defaultAppHubName
    }
    /// Requests per second one hub's REST API accepts (bursts of twice that).
    var hubRequestsPerSecond = 2000
    /// Export and import jobs: per hub, jobs kept, jobs waiting or running at once, bytes of
    /// job files and outputs, the largest job file, and how long finished jobs and files stay.
    var jobsMaxKept = JobQuota().maxJobs
    var jobsMaxActive = JobQuota().maxActiveJobs
    var jobsMaxBytes = JobQuota().maxBytes
    var jobFileMaxBytes = HubEngine.Configuration().maxJobFileBytes
    var jobsRetentionSeconds = 7 * 24 * 3600
    /// The bearer token `GET /metrics` asks for; `nil`: no token.
    var metricsToken: String?
    var consoleEnabled = true
    var consoleSampleSeconds = 15
    /// Connections open at once over both listeners; `nil`: from the file-descriptor limit.
    var maximumConnections: Int?
    var idleTimeoutSeconds = 60
    var bodyTimeoutSeconds = 60
    /// Connections open at once from one client; 0: no such limit.
    var maximumConnectionsPerClient = 256
    /// Sign-ups per client a minute (bursts of twice that).
    var signUpsPerMinute = 5
    /// Seconds a console session may sit unused.
    var consoleIdleTimeoutSeconds = 1800

    var emulators = "auto"
    var emulatorAPNsPort = 0
    var emulatorAPNsBroadcastPort = 0
    var emulatorFCMPort = 0
    var emulatorWebPushPort = 0
    var emulatorWNSPort = 0
    var emulatorTopic = "com.example.herald-demo"

    /// Every setting: its variable, the flag that sets it too, its default, its description
    /// for `--help` and for the reference, and how to apply a value. The one table of settings:
    /// `herald serve --help` lists it, and `herald config reference` prints it as the table of
    /// docs/configuration.md. A variable read elsewhere (the config file, the trace exporter)
    /// is listed for the reference as a ``Setting/readElsewhere(variable:flag:default:help:docs:)``.
    struct Setting: Sendable {
        var variable: String
        /// The command-line flag that sets it too (`--port`), on the commands that take it.
        var flag: String?
        /// The default as the reference shows it (Markdown); `—` for none.
        var defaultValue: String
        /// The short description `herald serve --help` shows, default included (plain text).
        var help: String
        /// The description the reference shows beside the default (Markdown; links are
        /// relative to docs/).
        var documentation: String
        var apply: @Sendable (inout HeraldConfiguration, String) throws -> Void
        var key: String { String(variable.dropFirst("HERALD_".count)).lowercased() }

        init(
            variable: String,
            flag: String? = nil,
            default defaultValue: String,
            help: String,
            docs documentation: String,
            apply: @escaping @Sendable (inout HeraldConfiguration, String) throws -> Void
        ) {
            self.variable = variable
            self.flag = flag
            self.defaultValue = defaultValue
            self.help = help
            self.documentation = documentation
            self.apply = apply
        }

        /// A row that sets the field at `field` to the variable's text. Its default is the
        /// field's initial value (`—` for none), which `--help` states after `help` unless
        /// `help` states a default itself; `default` describes one that is not a value (a
        /// field left `nil` until it is resolved where it is used).
        static func text(
            _ field: any WritableKeyPath<HeraldConfiguration, String> & Sendable, _ variable: String, flag: String? = nil,
            default described: String? = nil, help: String, docs: String
        ) -> Setting {
            row(field, variable, flag: flag, described: described, help: help, docs: docs, shown: { $0 }) { value in value }
        }

        /// As ``text(_:_:flag:default:help:docs:)``, for a field that may be `nil`.
        static func text(
            _ field: any WritableKeyPath<HeraldConfiguration, String?> & Sendable, _ variable: String, flag: String? = nil,
            default described: String? = nil, help: String, docs: String
        ) -> Setting {
            row(field, variable, flag: flag, described: described, help: help, docs: docs, shown: { $0 }) { value in value }
        }

        /// As ``text(_:_:flag:default:help:docs:)``, for a whole number within `range`.
        static func number(
            _ field: any WritableKeyPath<HeraldConfiguration, Int> & Sendable, _ variable: String, flag: String? = nil, in range: ClosedRange<Int>,
            default described: String? = nil, help: String, docs: String
        ) -> Setting {
            row(field, variable, flag: flag, described: described, help: help, docs: docs, shown: { String($0) }) { value in
                try HeraldConfiguration.int(value, variable, range)
            }
        }

        /// As ``number(_:_:flag:in:default:help:docs:)``, for a field that may be `nil`.
        static func number(
            _ field: any WritableKeyPath<HeraldConfiguration, Int?> & Sendable, _ variable: String, flag: String? = nil, in range: ClosedRange<Int>,
            default described: String? = nil, help: String, docs: String
        ) -> Setting {
            row(field, variable, flag: flag, described: described, help: help, docs: docs, shown: { $0.map(String.init) }) { value in
                try HeraldConfiguration.int(value, variable, range)
            }
        }

        /// As ``text(_:_:flag:default:help:docs:)``, for `true` or `false` (and their spellings
        /// that ``HeraldConfiguration/bool(_:_:)`` takes).
        static func flag(
            _ field: any WritableKeyPath<HeraldConfiguration, Bool> & Sendable, _ variable: String, flag: String? = nil,
            default described: String? = nil, help: String, docs: String
        ) -> Setting {
            row(field, variable, flag: flag, described: described, help: help, docs: docs, shown: { String($0) }) { value in
                try HeraldConfiguration.bool(value, variable)
            }
        }

        /// The row of `field`: its default is the field's initial value as `shown` writes it
        /// (`nil`: none) unless `described`, and a value of the variable is `parse`d into it.
        private static func row<Value>(
            _ field: any WritableKeyPath<HeraldConfiguration, Value> & Sendable, _ variable: String, flag: String?, described: String?,
            help: String, docs: String, shown: (Value) -> String?, parse: @escaping @Sendable (String) throws -> Value
        ) -> Setting {
            let initial = described == nil ? shown(HeraldConfiguration()[keyPath: field]) : nil
            let statesDefault = help.contains("(default") || help.contains("; default ")
            let help = initial.map { statesDefault ? help : "\(help) (default \($0))" } ?? help
            return Setting(variable: variable, flag: flag, default: described ?? initial.map { "`\($0)`" } ?? "—", help: help, docs: docs) {
                $0[keyPath: field] = try parse($1)
            }
        }

        /// A variable that something other than the settings reads (the config file's, the
        /// trace exporter's): in the reference and `--help`, applied by nothing here.
        static func readElsewhere(variable: String, flag: String? = nil, default defaultValue: String, help: String, docs: String) -> Setting {
            Setting(variable: variable, flag: flag, default: defaultValue, help: help, docs: docs) { _, _ in }
        }
    }

    static let settings: [Setting] = [
        .text(
            \.host, "HERALD_HOST", flag: "--host",
            help: "address to listen on",
            docs: "address to listen on"
        ),
        .number(
            \.port, "HERALD_PORT", flag: "--port", in: 0...65535,
            help: "HTTP port",
            docs: "HTTP port"
        ),
        .text(
            \.dataDirectory, "HERALD_DATA_DIR", flag: "--data-dir",
            help: "data directory: the hubs (each with its SQLite store), keys, certificates",
            docs:
                "the hubs (`hubs/<name>/`, each with its SQLite store, the app backend's `app` among them), keys and certificates; `herald hub …` takes the same flag"
        ),
        .init(
            variable: "HERALD_DATABASE_URL", flag: "--database-url", default: "—",
            help: "keep the hubs in PostgreSQL, shared by several nodes: postgres://user:password@host/database (default: the data directory)",
            docs:
                "`postgres://user:password@host:5432/database?sslmode=verify-full`: keep every hub in this PostgreSQL database instead, shared by several nodes ([Running several nodes](operations.md#running-several-nodes)); `herald hub …` and `herald send` take the same flag. libpq's `sslmode` (`disable`, `prefer`, `require`, `verify-ca`, `verify-full`), `sslrootcert=/path/ca.pem` (the CA of a server with a private certificate), `host=/socket/dir`, `application_name` and `connect_timeout` are understood; only `verify-full` checks that the server is the one named; the password never appears in logs or errors"
        ) {
            guard !$1.isEmpty else {
                $0.databaseURL = nil
                return
            }
            do {
                $0.databaseURL = try DatabaseURL($1)
            } catch let error as HeraldError {
                throw ConfigurationError("HERALD_DATABASE_URL: \(error.message)")
            }
        },
        .number(
            \.databaseConnections, "HERALD_DATABASE_CONNECTIONS", in: 1...1000,
            help: "most connections this node opens to HERALD_DATABASE_URL (it keeps up to 4 open, and one more that listens)",
            docs:
                "most connections one node opens to the database; it keeps up to 4 of them open for good, and one more that listens for other nodes' announcements"
        ),
        .number(
            \.deliveryLeaseSeconds, "HERALD_DELIVERY_LEASE", in: 2...3600,
            help:
                "seconds a delivery lease lasts: a node that dies or goes silent (killed, frozen, cut off from the database) has its notifications resumed by another within this; a live node renews its leases every quarter of it",
            docs:
                "seconds a worker holds a notification without a heartbeat (it beats every quarter of it); after a node dies or goes silent, another resumes its notifications within this"
        ),
        .number(
            \.deliveryPartitionSize, "HERALD_DELIVERY_PARTITION_SIZE", in: 0...100_000_000,
            help: "registrations per partition of a large notification, which the delivery workers of every node share; 0 never splits",
            docs:
                "registrations per partition of a large notification, which the delivery workers of every node share (at most 64 partitions); `0` never splits"
        ),
        .number(
            \.deliveryPageSize, "HERALD_DELIVERY_PAGE_SIZE", in: 50...100_000,
            help:
                "devices sent per page of a delivery (read four pages at a time), whose progress is saved after each: a node killed mid-broadcast sends its page in flight again when the notification resumes, so smaller pages send fewer repeats and cost more writes",
            docs:
                "devices sent per page of a delivery (read four pages at a time); progress is saved after each page, so a node killed mid-broadcast has at most a page per delivery sent again when the notification resumes ([Crashes and shutdowns](operations.md#crashes-and-shutdowns))"
        ),
        .init(
            variable: "HERALD_LOG_LEVEL", flag: "--log-level", default: "`info`",
            help: "trace, debug, info, notice, warning, error (default info)",
            docs: "trace … critical"
        ) {
            guard let level = Logger.Level(rawValue: $1.lowercased()) else {
                throw ConfigurationError("HERALD_LOG_LEVEL must be one of trace, debug, info, notice, warning, error, critical")
            }
            $0.logLevel = level
        },
        .init(
            variable: "HERALD_LOG_FORMAT", default: "`text`",
            help: "text, or json: one JSON object per line with the metadata as fields (default text)",
            docs: "`json`: one JSON object per line on standard error, the metadata as fields (`herald.hub`, `herald.request.id`, …), for log shippers"
        ) {
            guard ["text", "json"].contains($1.lowercased()) else { throw ConfigurationError("HERALD_LOG_FORMAT must be text or json, not '\($1)'") }
            $0.logFormat = $1.lowercased()
        },
        .flag(
            \.insecureDemoAuth, "HERALD_INSECURE_DEMO_AUTH", flag: "--insecure-demo-auth",
            help: "accept HTTP Basic with user name = password, no account (demos only; default false)",
            docs: "the tutorial's user = password scheme"
        ),
        .flag(
            \.allowSignUp, "HERALD_ALLOW_SIGNUP",
            help: "whether POST /api/accounts creates accounts",
            docs: "whether `POST /api/accounts` creates accounts"
        ),
        .number(
            \.signUpsPerMinute, "HERALD_SIGNUP_RATE_LIMIT", in: 1...100_000,
            help: "sign-ups one client (an IPv6 client by its /64) may attempt a minute, bursts of twice that; above it 429",
            docs:
                "sign-ups one client (an IPv6 client by its /64) may attempt a minute, in bursts of twice that; above it `429` with `Retry-After` ([Limits on callers](security.md#limits-on-callers))"
        ),
        .number(
            \.tokenLifetimeSeconds, "HERALD_TOKEN_LIFETIME", in: 60...31_536_000,
            help: "bearer token lifetime in seconds",
            docs: "bearer token lifetime, seconds"
        ),
        .number(
            \.bcryptCost, "HERALD_BCRYPT_COST", in: 4...31,
            help: "bcrypt cost of stored passwords",
            docs: "bcrypt cost"
        ),
        .text(
            \.publicURL, "HERALD_PUBLIC_URL", default: "from the request's `Host`",
            help: "Herald's URL as devices reach it, for rich-content links (default: from the request's Host)",
            docs:
                "Herald's URL as devices reach it, for `richUrl`; an `https` one also serves the console on plain HTTP, behind a proxy that terminates TLS ([The console](console.md))"
        ),
        .number(
            \.secureRetentionSeconds, "HERALD_SECURE_RETENTION", in: 60...31_536_000,
            help: "seconds a secure payload or rich content is kept",
            docs: "seconds secure payloads and rich content are kept"
        ),
        .init(
            variable: "HERALD_SECURE_PAYLOAD_KEY_FILE", default: "`<data-dir>/keys/secure-payload.key`, created if missing",
            help:
                "the key that seals secure payloads, read from this file (a mounted secret, the same on every node: 44 characters of base64 or 32 raw bytes); never created nor written, and never stored in the database (default <data-dir>/keys/secure-payload.key, created if missing)",
            docs:
                "the key that seals secure payloads, read from this file: a secret mounted into the container (Docker, Kubernetes), the same file for every node. It holds 44 characters of base64 (a line) or 32 raw bytes; Herald never creates nor writes it, and never stores the key in the database. A file that is missing, unreadable or not a 256-bit key stops `herald serve` at start with an error that names the variable and the file, never what the file holds"
        ) {
            guard !$1.trimmingSpaces().isEmpty else {
                throw ConfigurationError("HERALD_SECURE_PAYLOAD_KEY_FILE is empty: give the path of the key file, or leave it unset")
            }
            $0.securePayloadKeyFile = $1
        },
        .number(
            \.richMaxBytes, "HERALD_RICH_MAX_BYTES", in: 1...1_073_741_824,
            help: "largest rich-content upload in bytes",
            docs: "largest rich upload"
        ),
        .number(
            \.tlsPort, "HERALD_TLS_PORT", flag: "--tls-port", in: 0...65535,
            help: "HTTPS port of the hub REST API (default 8443; 0 turns TLS off)",
            docs: "HTTPS port of every API (the hub SDKs need it); `0` turns TLS off"
        ),
        .text(
            \.tlsCertFile, "HERALD_TLS_CERT_FILE", default: "a certificate from `<data-dir>/tls`",
            help: "certificate chain (PEM) served on HERALD_TLS_PORT, with HERALD_TLS_KEY_FILE",
            docs:
                "certificate chain (PEM) for the TLS port, with its key in `HERALD_TLS_KEY_FILE`; without them Herald issues one from its local CA (`<data-dir>/tls/ca.pem`)"
        ),
        .text(
            \.tlsKeyFile, "HERALD_TLS_KEY_FILE", default: "the key of that certificate",
            help: "private key (PEM) of HERALD_TLS_CERT_FILE",
            docs: "private key (PEM) of `HERALD_TLS_CERT_FILE`"
        ),
        .init(
            variable: "HERALD_HUB_ENDPOINT", flag: "--hub-endpoint", default: "`sb://localhost:<tls port>/`",
            help: "endpoint in hub connection strings, e.g. sb://push.example.com/ (default sb://localhost:<HERALD_TLS_PORT>/)",
            docs: "endpoint written into the connection strings `herald hub` prints"
        ) {
            $0.hubEndpoint = try hubEndpoint($1)
        },
        .number(
            \.hubRequestsPerSecond, "HERALD_HUB_RATE_LIMIT", in: 1...1_000_000,
            help: "requests per second one hub's REST API accepts, bursts of twice that; above it 429 with Retry-After",
            docs:
                "requests per second one hub's REST API accepts (bursts of twice that) from each class of key — Listen-only keys, and keys with Send or Manage, each have the whole rate — over all nodes sharing a database; above it `429` with `Retry-After`"
        ),
        .number(
            \.jobsMaxKept, "HERALD_JOBS_MAX_KEPT", in: 1...1_000_000,
            help: "export and import jobs one hub keeps, finished ones included; beyond it POST /{hub}/jobs gets 403",
            docs: "jobs one hub keeps, finished ones included; beyond it `POST /{hub}/jobs` gets `403`"
        ),
        .number(
            \.jobsMaxActive, "HERALD_JOBS_MAX_ACTIVE", in: 1...1000,
            help: "jobs one hub has waiting or running at once; beyond it POST /{hub}/jobs gets 429",
            docs:
                "export and import jobs one hub has waiting or running at once; beyond it `POST /{hub}/jobs` gets `429` ([Export and import](migrating.md#export-and-import))"
        ),
        .number(
            \.jobsMaxBytes, "HERALD_JOBS_MAX_BYTES", in: 1...1 << 50,
            help: "bytes of job files and job outputs one hub keeps; beyond it uploads and new jobs get 403 and a running job fails",
            docs: "bytes of job files and job outputs one hub keeps; beyond it uploads and new jobs get `403`, and a running job fails"
        ),
        .number(
            \.jobFileMaxBytes, "HERALD_JOB_FILE_MAX_BYTES", in: 1...1 << 40,
            help: "largest job file PUT /{hub}/jobs/files/{name} takes; beyond it 413",
            docs: "largest job file `PUT /{hub}/jobs/files/{name}` takes (streamed into the store); beyond it `413`"
        ),
        .number(
            \.jobsRetentionSeconds, "HERALD_JOBS_RETENTION", in: 60...31_536_000,
            help: "seconds finished jobs, their outputs and uploaded job files are kept before the sweep deletes them",
            docs: "seconds finished jobs with their outputs, and uploaded job files, are kept before the sweep deletes them"
        ),
        .number(
            \.maximumConnections, "HERALD_HTTP_MAX_CONNECTIONS", in: 1...1_000_000, default: "the open-file limit less 256, at most 10000",
            help:
                "connections open at once over both listeners; beyond it the connection idle the longest is closed, or, when all are busy, the new one gets 503 (default: the file-descriptor limit less 256, at most 10000)",
            docs:
                "connections open at once over both ports; beyond it the connection idle the longest is closed to make room, and when every one is busy with a request the new one gets `503` with `Retry-After: 1`"
        ),
        .number(
            \.maximumConnectionsPerClient, "HERALD_HTTP_MAX_CONNECTIONS_PER_CLIENT", in: 0...1_000_000,
            help:
                "connections open at once from one client (an IPv6 client by its /64); beyond it that client's connection idle the longest is closed, or, when all are busy, the new one gets 503; 0: no limit",
            docs:
                "connections open at once from one client (an IPv6 client by its /64); beyond it that client's connection idle the longest is closed, and when all of them are busy the new one gets `503`; other clients are not affected. `0`: no such limit (behind a reverse proxy, every connection is the proxy's)"
        ),
        .number(
            \.idleTimeoutSeconds, "HERALD_HTTP_IDLE_TIMEOUT", in: 1...86_400,
            help: "seconds a connection may stay idle, or take to send a request's head, before it is closed",
            docs: "seconds a connection may sit idle, or take to send a request's head, before it is closed"
        ),
        .number(
            \.bodyTimeoutSeconds, "HERALD_HTTP_BODY_TIMEOUT", in: 1...86_400,
            help: "seconds a request's body may take to arrive after its head",
            docs: "seconds a request's body may take to arrive after its head; then the connection is closed"
        ),
        .init(
            variable: "HERALD_METRICS_TOKEN", default: "—",
            help: "bearer token GET /metrics asks for (Authorization: Bearer <token>); default none: the page is open to whoever reaches the port",
            docs:
                "bearer token that `GET /metrics` asks for (`Authorization: Bearer <token>`; anything else gets `401`); without it the page is open to whoever reaches the port; `/ready` shows its details only to this token ([Health, readiness and request ids](operations.md#health-readiness-and-request-ids))"
        ) {
            $0.metricsToken = $1.isEmpty ? nil : $1
        },
        .flag(
            \.consoleEnabled, "HERALD_CONSOLE", default: "`on`",
            help: "serve the console at /console: on (default) or off",
            docs: "`off`: no console at `/console` ([The console](console.md))"
        ),
        .number(
            \.consoleIdleTimeoutSeconds, "HERALD_CONSOLE_IDLE_TIMEOUT", in: 60...86_400,
            help: "seconds a console session may sit unused before the operator must sign in again",
            docs: "seconds a console session may sit unused; then the operator signs in again"
        ),
        .number(
            \.consoleSampleSeconds, "HERALD_CONSOLE_SAMPLE_SECONDS", in: 1...3600,
            help: "how often the console's charts read the counters, in seconds",
            docs: "how often the console's charts read the counters of `/metrics`"
        ),
        .text(
            \.appHubConnectionString, "HERALD_APP_HUB_CONNECTION_STRING",
            help:
                "run the app backend on this hub through the hub REST API (a connection string of a Herald hub or a compatible cloud hub) instead of Herald's own hub",
            docs:
                "with `HERALD_APP_HUB_NAME`: keep the app backend's devices in that remote hub, through the hub REST API; accounts and content stay in the local `app` hub"
        ),
        .text(
            \.appHubName, "HERALD_APP_HUB_NAME", default: "`app`",
            help:
                "the hub that keeps the app backend's devices, accounts and content (default app, created on first start); with HERALD_APP_HUB_CONNECTION_STRING, the name of that remote hub",
            docs:
                "the hub of the catalog that keeps the app backend's devices, accounts and content (created on first start); with `HERALD_APP_HUB_CONNECTION_STRING`, the name of that remote hub"
        ),
        .text(
            \.apns.keyFile, "HERALD_APNS_KEY_FILE",
            help: "APNs token-auth key (.p8 file)",
            docs: "APNs token-auth key (`.p8`)"
        ),
        .text(
            \.apns.keyID, "HERALD_APNS_KEY_ID",
            help: "APNs key id (10 characters)",
            docs: "the key's id"
        ),
        .text(
            \.apns.teamID, "HERALD_APNS_TEAM_ID",
            help: "Apple developer team id",
            docs: "your team id"
        ),
        .text(
            \.apns.certFile, "HERALD_APNS_CERT_FILE",
            help:
                "APNs certificate authentication instead of a .p8 key: the certificate as a .p12 file (with HERALD_APNS_CERT_PASSWORD) or PEM (its key in the same file or in HERALD_APNS_CERT_KEY_FILE)",
            docs:
                "APNs certificate authentication instead of a `.p8` key: the certificate as a `.p12`, or PEM with its key in the same file ([APNs certificate authentication](#apns-certificate-authentication))"
        ),
        .text(
            \.apns.certPassword, "HERALD_APNS_CERT_PASSWORD", default: "none",
            help: "password of the .p12 HERALD_APNS_CERT_FILE (default none)",
            docs: "password of a `.p12` `HERALD_APNS_CERT_FILE`"
        ),
        .text(
            \.apns.certKeyFile, "HERALD_APNS_CERT_KEY_FILE", default: "the certificate's file",
            help: "PEM private key of a PEM HERALD_APNS_CERT_FILE",
            docs: "PEM private key of a PEM `HERALD_APNS_CERT_FILE`"
        ),
        .text(
            \.apns.topic, "HERALD_APNS_TOPIC", default: "with a certificate, its subject `UID`",
            help: "default apns-topic: the app's bundle id (with a certificate, default: its subject UID)",
            docs: "default `apns-topic`: the app's bundle id"
        ),
        .init(
            variable: "HERALD_APNS_ENVIRONMENT", default: "`production`",
            help: "production or sandbox (default production)",
            docs: "`production` or `sandbox`"
        ) {
            guard ["production", "sandbox"].contains($1.lowercased()) else { throw ConfigurationError("HERALD_APNS_ENVIRONMENT must be production or sandbox") }
            $0.apns.environment = $1.lowercased()
        },
        .text(
            \.apns.endpoint, "HERALD_APNS_ENDPOINT", default: "per environment",
            help: "APNs base URL, overriding the environment's (a proxy or a test double)",
            docs: "APNs base URL (a proxy or a test double)"
        ),
        .text(
            \.apns.broadcastEndpoint, "HERALD_APNS_BROADCAST_ENDPOINT", default: "per environment",
            help: "APNs broadcast channel management base URL, overriding the environment's",
            docs:
                "APNs broadcast channel management base URL ([Broadcast channels](app-backend.md#broadcast-channels)); a proxy or a test double, such as the emulator's broadcast port that `herald emulate` prints"
        ),
        .text(
            \.apns.caFile, "HERALD_APNS_CA_FILE", default: "system roots",
            help: "PEM file of the CAs trusted for APNs (default: the system's)",
            docs: "PEM of the CAs trusted for APNs"
        ),
        .number(
            \.apns.connections, "HERALD_APNS_CONNECTIONS", in: 1...64,
            help: "HTTP/2 connections to APNs",
            docs: "HTTP/2 connections to APNs"
        ),
        .text(
            \.fcm.serviceAccountFile, "HERALD_FCM_SERVICE_ACCOUNT_FILE",
            help: "Firebase service-account JSON file",
            docs: "Firebase service-account JSON"
        ),
        .text(
            \.fcm.endpoint, "HERALD_FCM_ENDPOINT", default: "`https://fcm.googleapis.com`",
            help: "FCM base URL (default https://fcm.googleapis.com)",
            docs: "FCM base URL"
        ),
        .text(
            \.fcm.tokenURI, "HERALD_FCM_TOKEN_URI", default: "the account's `token_uri`",
            help: "OAuth token URL, overriding the service account's token_uri",
            docs: "OAuth token URL"
        ),
        .text(
            \.fcm.caFile, "HERALD_FCM_CA_FILE", default: "system roots",
            help: "PEM file of the CAs trusted for FCM and its token URL (default: the system's)",
            docs: "PEM of the CAs trusted for FCM and its token URL"
        ),
        .text(
            \.wns.packageSID, "HERALD_WNS_PACKAGE_SID",
            help: "WNS package SID (client id) of the Windows app",
            docs: "the Windows app's WNS package SID (client id)"
        ),
        .text(
            \.wns.clientSecret, "HERALD_WNS_CLIENT_SECRET",
            help: "WNS client secret",
            docs: "the Windows app's WNS client secret"
        ),
        .text(
            \.wns.tokenURI, "HERALD_WNS_TOKEN_URI", default: "`https://login.live.com/accesstoken.srf`",
            help: "WNS OAuth token URL (default https://login.live.com/accesstoken.srf)",
            docs: "WNS OAuth token URL"
        ),
        .text(
            \.wns.caFile, "HERALD_WNS_CA_FILE", default: "system roots",
            help: "PEM file of the CAs trusted for WNS (default: the system's)",
            docs: "PEM of the CAs trusted for WNS"
        ),
        .init(
            variable: "HERALD_WNS_ALLOWED_HOSTS", default: "`*.notify.windows.com`",
            help: "comma-separated hosts WNS channel URIs may name; *.domain for its subdomains (default *.notify.windows.com)",
            docs:
                "hosts a WNS channel URI may name (`*.domain`: its subdomains); a registration, installation or direct send naming another host gets `400`, and the WNS access token is sent to no other host"
        ) { $0.wns.allowedHosts = try allowList($1, "HERALD_WNS_ALLOWED_HOSTS") },
        .init(
            variable: "HERALD_WEBPUSH_SUBJECT", default: "—",
            help: "VAPID contact (mailto: or https:); turns on Web Push to real push services",
            docs: "VAPID contact (`mailto:` / `https:`); turns on Web Push to real push services"
        ) {
            guard $1.hasPrefix("mailto:") || $1.hasPrefix("https:") else {
                throw ConfigurationError("HERALD_WEBPUSH_SUBJECT must start with mailto: or https:")
            }
            $0.webPush.subject = $1
        },
        .text(
            \.webPush.vapidKeyFile, "HERALD_WEBPUSH_VAPID_KEY_FILE", default: "`<data-dir>/keys/vapid-private.pem`",
            help: "VAPID private key (PEM); created if missing (default <data-dir>/keys/vapid-private.pem)",
            docs:
                "Herald's VAPID key, created if missing; its public key is the `applicationServerKey` web apps subscribe with (printed at start, and in `GET /emulators`)"
        ),
        .text(
            \.webPush.caFile, "HERALD_WEBPUSH_CA_FILE", default: "system roots",
            help: "PEM file of the CAs trusted for push services (default: the system's)",
            docs: "PEM of the CAs trusted for push services"
        ),
        .init(
            variable: "HERALD_WEBPUSH_ALLOWED_HOSTS", default: "the major browsers' push services",
            help: "comma-separated push-service hosts subscriptions may point at; *.domain for its subdomains (default: the major browsers' services)",
            docs:
                "hosts a subscription endpoint may point at (`*.domain`: its subdomains); another host gets `400` when the subscription is saved, so a client cannot make Herald POST anywhere"
        ) { $0.webPush.allowedHosts = try allowList($1, "HERALD_WEBPUSH_ALLOWED_HOSTS") },
        .init(
            variable: "HERALD_WEBHOOK_ALLOWED_HOSTS", default: "any host",
            help: "comma-separated hosts webhook endpoints may name; *.domain for its subdomains (default: any host)",
            docs: "hosts a webhook endpoint's URL may name (`*.domain`: its subdomains); checked when an endpoint is added (`400`) and before every attempt"
        ) { $0.webhooks.allowedHosts = try allowList($1, "HERALD_WEBHOOK_ALLOWED_HOSTS") },
        .init(
            variable: "HERALD_WEBHOOK_HTTP_HOSTS", default: "none",
            help: "comma-separated hosts webhook endpoints may reach over plain http, for a local receiver (default: none, https only)",
            docs: "hosts a webhook endpoint may reach over plain `http` (a local receiver: `127.0.0.1`); every other endpoint is `https`"
        ) { $0.webhooks.plainHTTPHosts = HostAllowList(commaSeparated: $1) },
        .text(
            \.webhooks.caFile, "HERALD_WEBHOOK_CA_FILE", default: "the system's CAs",
            help: "PEM file of the CAs trusted for webhook endpoints (default: the system's)",
            docs: "PEM file of the CAs trusted for webhook endpoints"
        ),
        .number(
            \.webhooks.timeoutSeconds, "HERALD_WEBHOOK_TIMEOUT", in: 1...60,
            help: "seconds one webhook attempt may take",
            docs: "seconds one webhook attempt may take (1–60)"
        ),
        .init(
            variable: "HERALD_EMULATORS", default: "`auto`",
            help: "auto: built-in emulators for platforms without credentials; off: none (default auto)",
            docs: "`auto`: built-in emulators for platforms without credentials; `off`: none"
        ) {
            guard ["auto", "off"].contains($1.lowercased()) else { throw ConfigurationError("HERALD_EMULATORS must be auto or off") }
            $0.emulators = $1.lowercased()
        },
        .number(
            \.emulatorAPNsPort, "HERALD_EMULATOR_APNS_PORT", in: 0...65535, default: "any free port",
            help: "port of the built-in APNs emulator (default: any free port)",
            docs: "where the APNs emulator listens"
        ),
        .number(
            \.emulatorAPNsBroadcastPort, "HERALD_EMULATOR_APNS_BROADCAST_PORT", in: 0...65535, default: "any free port",
            help: "port of the built-in APNs emulator's broadcast channel management API (default: any free port)",
            docs: "where the APNs emulator's broadcast channel management API listens (Apple's is on port 2196)"
        ),
        .number(
            \.emulatorFCMPort, "HERALD_EMULATOR_FCM_PORT", in: 0...65535, default: "any free port",
            help: "port of the built-in FCM emulator (default: any free port)",
            docs: "where the FCM emulator listens"
        ),
        .number(
            \.emulatorWebPushPort, "HERALD_EMULATOR_WEBPUSH_PORT", in: 0...65535, default: "any free port",
            help: "port of the built-in Web Push service emulator (default: any free port)",
            docs: "where the Web Push emulator listens"
        ),
        .number(
            \.emulatorWNSPort, "HERALD_EMULATOR_WNS_PORT", in: 0...65535, default: "any free port",
            help: "port of the built-in WNS emulator (default: any free port)",
            docs: "where the WNS emulator listens"
        ),
        .text(
            \.emulatorTopic, "HERALD_EMULATOR_TOPIC",
            help: "bundle id the APNs emulator's devices belong to",
            docs: "bundle id of the emulator's devices"
        ),
    ]

    /// Reads the config file (if any), then the environment, then `overrides` (from flags).
    static func load(
        configFile: String?,
        environment: [String: String] = ProcessInfo.processInfo.environment,
        overrides: [String: String]
    ) throws -> HeraldConfiguration {
        var configuration = HeraldConfiguration()
        var values: [String: String] = [:]
        let file = configFile ?? environment["HERALD_CONFIG"]
        if let file {
            guard let data = FileManager.default.contents(atPath: file) else {
                throw ConfigurationError("cannot read the config file \(file)")
            }
            guard let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
                throw ConfigurationError("the config file \(file) is not a JSON object")
            }
            let known = Set(settings.map(\.key))
            for (key, value) in object {
                guard known.contains(key.lowercased()) else {
                    throw ConfigurationError("unknown setting '\(key)' in \(file); `herald serve --help` lists the settings")
                }
                values["HERALD_" + key.uppercased()] = "\(value)"
            }
        }
        for setting in settings {
            if let value = environment[setting.variable] { values[setting.variable] = value }
        }
        for (variable, value) in overrides { values[variable] = value }
        for setting in settings {
            if let value = values[setting.variable] { try setting.apply(&configuration, value) }
        }
        return configuration
    }

    static func int(_ value: String, _ name: String, _ range: ClosedRange<Int>) throws -> Int {
        guard let n = Int(value.trimmingSpaces()), range.contains(n) else {
            throw ConfigurationError("\(name) must be a whole number from \(range.lowerBound) to \(range.upperBound), not '\(value)'")
        }
        return n
    }

    /// A comma-separated list of hosts; an empty one would refuse every device of the platform.
    static func allowList(_ value: String, _ name: String) throws -> HostAllowList {
        let list = HostAllowList(commaSeparated: value)
        guard !list.isEmpty else {
            throw ConfigurationError("\(name) names no host; give at least one (*.domain allows its subdomains)")
        }
        return list
    }

    /// Checks an endpoint for connection strings (`sb://`, `https://` or `http://`, a host, an
    /// optional port) and ends it with `/`, as the cloud hub's endpoints do.
    static func hubEndpoint(_ value: String) throws -> String {
        let endpoint = value.trimmingSpaces()
        let invalid = ConfigurationError("HERALD_HUB_ENDPOINT must be a URL such as sb://push.example.com/ or sb://push.example.com:8443/, not '\(value)'")
        guard let separator = endpoint.range(of: "://"),
            ["sb", "https", "http"].contains(endpoint[..<separator.lowerBound].lowercased())
        else { throw invalid }
        let authority = endpoint[separator.upperBound...].prefix { $0 != "/" }
        guard !authority.isEmpty, !endpoint.contains(where: { $0.isWhitespace || $0 == ";" || $0 == "?" || $0 == "#" }) else {
            throw invalid
        }
        return endpoint.hasSuffix("/") ? endpoint : endpoint + "/"
    }

    /// The endpoint hub connection strings carry: ``hubEndpoint``, or `sb://localhost:<tlsPort>/`;
    /// `nil` when neither is set (TLS off and no endpoint given).
    var hubConnectionEndpoint: String? {
        if let hubEndpoint { return hubEndpoint }
        return tlsPort == 0 ? nil : "sb://localhost:\(tlsPort)/"
    }

    static func bool(_ value: String, _ name: String) throws -> Bool {
        switch value.lowercased() {
        case "1", "true", "yes", "on": return true
        case "0", "false", "no", "off": return false
        default: throw ConfigurationError("\(name) must be true or false, not '\(value)'")
        }
    }

    static var helpText: String {
        "Settings (flag > environment > config file > default):\n"
            + settings.map { helpEntry($0.variable, $0.help) }.joined(separator: "\n")
            + "\n\nTracing (the OpenTelemetry variables, read by the exporter):\n"
            + tracingVariables.map { helpEntry($0.variable, $0.help) }.joined(separator: "\n")
    }

    /// One setting in the help's table: its name, then its description wrapped in a column of
    /// its own, so that an 80-column terminal shows it as it is (the help's own wrapping would
    /// cut each line again, without the indentation).
    static func helpEntry(_ name: String, _ help: String, width: Int = 79) -> String {
        let column = 37
        var lines: [String] = []
        var line = "  " + name.padding(toLength: max(name.count, column - 3), withPad: " ", startingAt: 0)
        var lineHasWords = false
        for word in help.split(separator: " ") {
            if lineHasWords, line.count + 1 + word.count > width {
                lines.append(line)
                line = String(repeating: " ", count: column - 1)
                lineHasWords = false
            }
            line += " " + word
            lineHasWords = true
        }
        lines.append(line)
        return lines.joined(separator: "\n")
    }
}

struct ConfigurationError: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
