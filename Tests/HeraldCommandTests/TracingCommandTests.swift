import Foundation
import HeraldTestSupport
import Testing

/// The Python module the OTLP/HTTP collector of `Tests/Interop/otlp_traces.py` decodes with.
enum TracingInterop {
    static let modules = "opentelemetry.proto.collector.trace.v1.trace_service_pb2"
    static let install = "pip install opentelemetry-proto"
}

/// `herald serve` with OTEL_EXPORTER_OTLP_ENDPOINT set exports its traces to a collector: the
/// request that accepted a notification, the acceptance, its delivery and each push, in one
/// trace, with no device token or tag in it.
@Suite(
    "herald serve exports traces over OTLP/HTTP",
    .enabled("needs python3 with \(TracingInterop.modules): \(TracingInterop.install)") {
        // CI installs it (.ci/run): there, a missing module fails the test rather than skip it.
        if ProcessInfo.processInfo.environment["CI"] != nil { return true }
        return await PythonInterop.canImport(TracingInterop.modules)
    },
    .timeLimit(.minutes(3))
)
struct TracingCommandTests {
    @Test func aNotificationsTraceRunsFromTheRequestToEachPush() async throws {
        let output = try await PythonInterop.run("otlp_traces.py", arguments: ["--herald", HeraldCommand.binary.path])
        print(output.stdout)
        #expect(output.status == 0, "\(output.transcript)")
        #expect(output.stdout.contains("trace checked"))
    }

    /// SIGTERM while a delivery waits to retry: the exporter stops after the hubs, so the
    /// delivery's span is exported with the rest when the node stops.
    @Test func theSpansOfADeliveryRunningAtSIGTERMAreExported() async throws {
        let output = try await PythonInterop.run(
            "otlp_traces.py", arguments: ["--herald", HeraldCommand.binary.path, "--sigterm-mid-delivery"])
        print(output.stdout)
        #expect(output.status == 0, "\(output.transcript)")
        #expect(output.stdout.contains("shutdown checked"))
    }
}
