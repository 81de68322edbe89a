import Foundation
import Logging
import OTel
import ServiceLifecycle
import Tracing

/// Traces exported over OTLP/HTTP (swift-otel), set up only when the standard
/// `OTEL_EXPORTER_OTLP_ENDPOINT` or `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT` is set: otherwise no
/// tracer is set up, the spans Herald makes are no-ops, and no trace context is stored.
///
/// The other `OTEL_*` variables of the OpenTelemetry specification apply (`OTEL_SERVICE_NAME`,
/// default `herald`; `OTEL_TRACES_SAMPLER`, `OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_BSP_*`, …).
enum TracingBackend {
    /// The variables that turn tracing on, either one.
    static let endpointVariables = ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]

    /// Sets up the process's tracer when an endpoint is configured and returns the service that
    /// exports its spans (run it in the service group, before the services that make spans, so
    /// that it stops after them and sends what they ended); `nil` when tracing is off. Once per
    /// process.
    static func bootstrap(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger) throws -> (any Service)? {
        guard endpointVariables.contains(where: { !(environment[$0] ?? "").isEmpty }) else { return nil }
        var configuration = OTel.Configuration.default
        configuration.serviceName = "herald"
        configuration.diagnosticLogger = .custom(logger)
        // Its notes on each variable read (also of the metrics and logs it does not export here)
        // are noise at start; its warnings and errors are not.
        configuration.diagnosticLogLevel = .warning
        configuration.metrics.enabled = false
        configuration.logs.enabled = false
        let (tracer, service) = try OTel.makeTracingBackend(configuration: configuration)
        InstrumentationSystem.bootstrap(tracer)
        logger.info("Exporting traces over OTLP/HTTP")
        return service
    }
}
