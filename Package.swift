// swift-tools-version:6.2
import Foundation
import PackageDescription

/// One set of Swift 6 settings for every target.
let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
    .enableUpcomingFeature("MemberImportVisibility"),
]

/// `HERALD_TARGETS=HeraldCore,HeraldCoreTests swift test` builds and tests only the named
/// targets (each must list what it depends on): quick iteration on one layer.
let onlyTargets: Set<String>? = Context.environment["HERALD_TARGETS"].map {
    Set($0.split(separator: ",").map { String($0).trimmingCharacters(in: .whitespaces) })
}

let package = Package(
    name: "herald",
    platforms: [.macOS(.v15), .iOS(.v18)],
    products: [
        .executable(name: "herald", targets: ["herald"]),
        .library(name: "HeraldCore", targets: ["HeraldCore"]),
        .library(name: "HeraldHubWire", targets: ["HeraldHubWire"]),
        .library(name: "HeraldTLS", targets: ["HeraldTLS"]),
        .library(name: "HeraldWebPushCrypto", targets: ["HeraldWebPushCrypto"]),
        .library(name: "HeraldStore", targets: ["HeraldStore"]),
        .library(name: "HeraldSQLite", targets: ["HeraldSQLite"]),
        .library(name: "HeraldPostgres", targets: ["HeraldPostgres"]),
        .library(name: "HeraldMetrics", targets: ["HeraldMetrics"]),
        .library(name: "HeraldPush", targets: ["HeraldPush"]),
        .library(name: "HeraldHub", targets: ["HeraldHub"]),
        .library(name: "HeraldServer", targets: ["HeraldServer"]),
        .library(name: "HeraldEmulator", targets: ["HeraldEmulator"]),
        .library(name: "HeraldClient", targets: ["HeraldClient"]),
        .library(name: "HeraldHubAPIUserDevices", targets: ["HeraldHubAPIUserDevices"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/vapor/sqlite-nio.git", from: "1.13.2"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-crypto.git", "3.12.3"..<"5.0.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-nio-extras.git", from: "1.32.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        // The console's pages: Mustache templates, embedded in the binary with its CSS and script.
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
        // The Prometheus registry and text format behind `GET /metrics`.
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        // Traces: the API everywhere, and swift-otel's OTLP/HTTP exporter in the binary only
        // (its gRPC exporter, which would pull in grpc-swift, is left out).
        .package(url: "https://github.com/apple/swift-distributed-tracing.git", from: "1.7.3"),
        .package(url: "https://github.com/apple/swift-service-context.git", from: "1.5.1"),
        .package(url: "https://github.com/swift-otel/swift-otel.git", from: "1.6.0", traits: ["OTLPHTTP"]),
        // `swift package generate-documentation` for the DocC catalogs (HeraldClient, HeraldCore).
        .package(url: "https://github.com/swiftlang/swift-docc-plugin.git", from: "1.5.0"),
        // Micro-benchmarks (Benchmarks/): allocations per send, counted by the malloc interposer.
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        // Pure model: no NIO, no networking, no dependencies. Shared by the server and the app SDK.
        .target(name: "HeraldCore", swiftSettings: swiftSettings),
        // The cloud hub's wire format: its REST documents (registrations, installations and
        // JSON Patch, notification details and outcomes, errors), connection strings and shared
        // access signatures, which Crypto signs and checks. Shared by the server and the SDK.
        .target(
            name: "HeraldHubWire",
            dependencies: ["HeraldCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // Web Push message encryption (RFC 8291 over RFC 8188's aes128gcm): both sides, so that
        // the provider encrypts and the emulator decrypts with one implementation.
        .target(
            name: "HeraldWebPushCrypto",
            dependencies: ["HeraldCore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        // Certificates and keys: a local certificate authority, PEM loading, trust roots, and
        // the files that hold secrets (written owner-only). Its errors follow HeraldCore's CodedError.
        .target(
            name: "HeraldTLS",
            dependencies: [
                "HeraldCore",
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // The store contract: what every store implementation provides, in one transaction each.
        .target(
            name: "HeraldStore",
            dependencies: ["HeraldCore", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        // What HeraldSQLite's connection asks of SQLite that Swift cannot call (a C function
        // with variable arguments).
        .target(
            name: "CHeraldSQLite",
            dependencies: [.product(name: "SQLiteNIO", package: "sqlite-nio")]
        ),
        // The embedded store: one SQLite file per hub.
        .target(
            name: "HeraldSQLite",
            dependencies: [
                "CHeraldSQLite",
                "HeraldCore",
                "HeraldStore",
                // SecureFile: the hubs' definitions hold their keys and credentials.
                "HeraldTLS",
                // For the SQLite library it builds (VaporCSQLite): HeraldSQLite's connection
                // (SQLiteConnection, with its kept statements) is its own.
                .product(name: "SQLiteNIO", package: "sqlite-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // The store for several nodes: every hub in one PostgreSQL database.
        .target(
            name: "HeraldPostgres",
            dependencies: [
                "HeraldCore",
                "HeraldStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        // Every metric family, on one Prometheus registry that the server serves and the
        // engine and the providers record to (handed to them, never process-wide).
        .target(
            name: "HeraldMetrics",
            dependencies: ["HeraldCore", .product(name: "Prometheus", package: "swift-prometheus")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldPush",
            dependencies: [
                "HeraldCore",
                "HeraldMetrics",
                "HeraldTLS",
                "HeraldWebPushCrypto",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldHub",
            dependencies: [
                "HeraldHubWire",
                "HeraldCore",
                "HeraldMetrics",
                "HeraldTLS",
                "HeraldStore",
                "HeraldSQLite",
                "HeraldPush",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "ServiceContextModule", package: "swift-service-context"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldEmulator",
            dependencies: [
                "HeraldCore",
                "HeraldClient",
                "HeraldTLS",
                "HeraldWebPushCrypto",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "HeraldServer",
            dependencies: [
                "HeraldHubWire",
                "HeraldCore",
                "HeraldMetrics",
                "HeraldTLS",
                "HeraldStore",
                "HeraldPush",
                "HeraldHub",
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdAuth", package: "hummingbird-auth"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTPTypes", package: "swift-nio-extras"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
                .product(name: "Instrumentation", package: "swift-distributed-tracing"),
                .product(name: "ServiceContextModule", package: "swift-service-context"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // The console's templates, style sheet and script, compiled into the binary (no
            // resource bundle beside it, nothing fetched at run time).
            resources: [
                .embedInCode("Console/Assets/console.css"),
                .embedInCode("Console/Assets/console.js"),
                .embedInCode("Console/Templates"),
                .embedInCode("OpenAPI/openapi.json"),
            ],
            swiftSettings: swiftSettings
        ),
        // The app and backend SDK: Foundation networking only, no server dependencies.
        .target(name: "HeraldClient", dependencies: ["HeraldHubWire", "HeraldCore"], swiftSettings: swiftSettings),
        // The app backend on a hub reached through the hub REST API: HeraldHub's UserDevices
        // implemented with HeraldClient's NotificationHubClient.
        .target(
            name: "HeraldHubAPIUserDevices",
            dependencies: [
                "HeraldHubWire", "HeraldCore", "HeraldHub", "HeraldClient",
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "herald",
            dependencies: [
                "HeraldHubWire",
                "HeraldCore", "HeraldTLS", "HeraldStore", "HeraldSQLite", "HeraldPostgres", "HeraldPush", "HeraldHub",
                "HeraldServer", "HeraldEmulator", "HeraldClient", "HeraldHubAPIUserDevices", "HeraldMetrics",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "OTel", package: "swift-otel"),
                .product(name: "Tracing", package: "swift-distributed-tracing"),
            ],
            swiftSettings: swiftSettings
        ),
        // What more than one test target uses: the Python interop runner, bounded waits,
        // expectations on HeraldError.
        .target(
            name: "HeraldTestSupport",
            dependencies: [
                "HeraldCore", .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Tests/HeraldTestSupport",
            swiftSettings: swiftSettings
        ),
        // The store contract's conformance suite: checks written against `any HeraldStore`
        // that every store implementation's tests run, one parameterized test each.
        .target(
            name: "HeraldStoreConformance",
            dependencies: ["HeraldCore", "HeraldStore", "HeraldTestSupport"],
            path: "Tests/HeraldStoreConformance",
            swiftSettings: swiftSettings
        ),
        // `swift package benchmark --target HTTP2ClientBenchmarks`: allocations and CPU per
        // send through the push providers' HTTP/2 client. CI builds it (every target is built)
        // but does not run it.
        .executableTarget(
            name: "HTTP2ClientBenchmarks",
            dependencies: [
                "HeraldPush",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            path: "Benchmarks/HTTP2ClientBenchmarks",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .testTarget(
            name: "HeraldCoreTests",
            dependencies: ["HeraldCore", "HeraldTestSupport"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldWebPushCryptoTests",
            dependencies: ["HeraldWebPushCrypto", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldHubWireTests",
            dependencies: ["HeraldCore", "HeraldHubWire", "HeraldTestSupport", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldSQLiteTests",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldSQLite", "HeraldStoreConformance", "HeraldTestSupport",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldPostgresTests",
            dependencies: [
                "HeraldCore", "HeraldStore", "HeraldPostgres", "HeraldSQLite", "HeraldStoreConformance", "HeraldTestSupport", "HeraldHub",
                "HeraldHubWire", "HeraldTLS",
                "HeraldServer",
                // Not imported: the cluster test runs the `herald` binary, which this makes sure is built.
                "herald",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        // The `herald` binary as a user runs it: its commands' output, exit codes and files.
        .testTarget(
            name: "HeraldCommandTests",
            dependencies: [
                "HeraldTestSupport",
                // The tests run the `herald` binary, which this makes sure is built; the
                // progress reporter's and the load generator's tests import it (`@testable`).
                "herald",
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldHubTests",
            dependencies: [
                "HeraldHubWire",
                "HeraldCore", "HeraldTLS", "HeraldStore", "HeraldSQLite", "HeraldPostgres", "HeraldPush", "HeraldHub", "HeraldEmulator", "HeraldTestSupport",
                "HeraldMetrics",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            // A data directory made by an earlier release, for the upgrade tests.
            exclude: ["Fixtures"],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldEmulatorTests",
            dependencies: [
                "HeraldCore", "HeraldTLS", "HeraldWebPushCrypto", "HeraldEmulator", "HeraldTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldPushTests",
            dependencies: [
                "HeraldCore", "HeraldTLS", "HeraldWebPushCrypto", "HeraldPush", "HeraldEmulator", "HeraldTestSupport",
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOEmbedded", package: "swift-nio"),
                .product(name: "NIOHPACK", package: "swift-nio-http2"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "HeraldServerTests",
            dependencies: [
                "HeraldHubWire",
                "HeraldCore", "HeraldTLS", "HeraldStore", "HeraldSQLite", "HeraldPostgres", "HeraldPush", "HeraldHub", "HeraldServer",
                "HeraldEmulator", "HeraldClient", "HeraldHubAPIUserDevices", "HeraldTestSupport", "HeraldMetrics",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)

if let onlyTargets {
    package.targets = package.targets.filter { onlyTargets.contains($0.name) }
    package.products = package.products.filter { product in
        product.name != "herald" && onlyTargets.contains(product.name)
    }
}
