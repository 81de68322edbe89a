import Foundation

/// The reference of every setting, as docs/configuration.md shows it: one Markdown table made
/// from ``HeraldConfiguration/settings`` and the variables read elsewhere (the config file's,
/// the OpenTelemetry exporter's), so that the page says what the code accepts.
extension HeraldConfiguration {
    /// The config file, read before the settings (``load(configFile:environment:overrides:)``).
    static let configFileVariable = Setting.readElsewhere(
        variable: "HERALD_CONFIG", flag: "--config", default: "—",
        help: "JSON config file",
        docs: "a JSON config file of settings: keys are the variable names without `HERALD_`, lower case (`{\"port\": 9000}`); variables and flags override it"
    )

    /// The OpenTelemetry variables, read by the trace exporter (``TracingBackend``).
    static let tracingVariables: [Setting] = [
        .readElsewhere(
            variable: "OTEL_EXPORTER_OTLP_ENDPOINT", default: "—",
            help: "export traces over OTLP/HTTP to this collector (…/v1/traces); unset: no tracing, at no cost",
            docs:
                "an OpenTelemetry collector's OTLP/HTTP address (`http://collector:4318`): Herald exports its traces to `…/v1/traces` ([Tracing](operations.md#tracing)); unset, nothing is traced and tracing costs nothing"
        ),
        .readElsewhere(
            variable: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", default: "—",
            help: "the traces URL itself, instead",
            docs: "the traces URL itself, used as given, instead of the above"
        ),
        .readElsewhere(
            variable: "OTEL_SERVICE_NAME", default: "`herald`",
            help: "the service's name in the traces (default herald); the other OTEL_* variables apply too",
            docs:
                "the service's name in the traces; the exporter reads the other `OTEL_*` variables of the OpenTelemetry specification too (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_TRACES_SAMPLER`, `OTEL_TRACES_SAMPLER_ARG`, `OTEL_BSP_*`, …)"
        ),
    ]

    /// The line before the generated table in a page, and the line after it.
    static let referenceMarkers = (
        begin: "<!-- BEGIN generated: herald config reference -->",
        end: "<!-- END generated -->"
    )

    /// Every variable, its flag, its default and what it does: the config file first, then
    /// ``settings`` in their order, then the tracing variables. Ends with a line break.
    static var reference: String {
        let rows = ([configFileVariable] + settings + tracingVariables).map(row)
        return (["| variable | default | meaning |", "|---|---|---|"] + rows).joined(separator: "\n") + "\n"
    }

    /// One row of the table; a `|` in a cell is escaped so that it stays in its cell.
    static func row(_ setting: Setting) -> String {
        let name = "`\(setting.variable)`" + (setting.flag.map { " / `\($0)`" } ?? "")
        let cells = [name, setting.defaultValue, setting.documentation].map { $0.replacingOccurrences(of: "|", with: "\\|") }
        return "| " + cells.joined(separator: " | ") + " |"
    }

    /// `page` with the text between its reference markers replaced by ``reference``.
    static func replacingReference(in page: String) throws -> String {
        let (begin, end) = referenceMarkers
        guard let start = page.range(of: begin + "\n"), let stop = page.range(of: end, range: start.upperBound..<page.endIndex) else {
            throw ConfigurationError("the page has no line \(begin) followed, later, by \(end)")
        }
        return String(page[..<start.upperBound]) + reference + String(page[stop.lowerBound...])
    }
}
