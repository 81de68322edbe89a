import Foundation
import HeraldCore
public import Logging
import Synchronization

/// Writes one line per entry, on standard error, in one of two formats:
///
/// - ``Format-swift.enum/text`` (the default): the lines of swift-log's stream handler,
///   `2026-11-28T23:42:37+0000 info herald: herald.request.id=7 herald.user=alice [HeraldServer] Message`;
/// - ``Format-swift.enum/json`` (`HERALD_LOG_FORMAT=json`, for log shippers): one JSON object
///   (keys sorted) with `timestamp` (ISO 8601, UTC, milliseconds), `level`, `logger` (the label),
///   `message`, `source` (the module), and every metadata entry as a field of its own
///   (`herald.hub`, `herald.request.id`, …; an entry whose name is taken by one of those is
///   written as `metadata.<name>`).
///
/// The logger's metadata is written out when a line is logged, and only then: a request sets
/// two or three entries (its id, its user) whether or not it logs anything, and the stream
/// handler wrote all of them out each time one was set.
public struct LineLogHandler: LogHandler {
    /// How a line is written.
    public enum Format: Sendable {
        case text
        case json
    }

    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let format: Format
    private let write: @Sendable (String) -> Void

    /// A handler that writes to standard error, as swift-log's default handler does.
    public init(label: String, format: Format, metadataProvider: Logger.MetadataProvider? = nil) {
        self.init(label: label, format: format, metadataProvider: metadataProvider) { line in
            Self.standardError.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
        }
    }

    /// A handler that hands each line (with its newline) to `write`.
    public init(
        label: String, format: Format, metadataProvider: Logger.MetadataProvider? = nil, write: @escaping @Sendable (String) -> Void
    ) {
        self.label = label
        self.format = format
        self.metadataProvider = metadataProvider
        self.write = write
    }

    /// Lines from several loggers do not interleave.
    private static let standardError = Mutex(())

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let own = event.metadata { all.merge(own) { _, new in new } }
        switch format {
        case .text: write(textLine(event, all))
        case .json: jsonLine(event, all).map(write)
        }
    }

    private func textLine(_ event: LogEvent, _ metadata: Logger.Metadata) -> String {
        var metadata = metadata
        if let error = event.error {
            metadata["error.message"] = "\(error)"
            metadata["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var line = Self.localTimestamp() + " \(event.level)" + (label.isEmpty ? "" : " ") + label + ":"
        for (key, value) in metadata.sorted(by: { $0.key < $1.key }) { line += " \(key)=\(value)" }
        line += " [\(event.source)] \(event.message)\n"
        return line
    }

    /// The local time to the second, with its offset from UTC (as the stream handler writes it).
    private static func localTimestamp() -> String {
        var now = time(nil)
        var local = tm()
        guard localtime_r(&now, &local) != nil else { return "<unknown>" }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private func jsonLine(_ event: LogEvent, _ metadata: Logger.Metadata) -> String? {
        var fields: [(key: String, value: JSONValue)] = [
            ("timestamp", .string(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))),
            ("level", .string(event.level.rawValue)),
            ("logger", .string(label)),
            ("message", .string(event.message.description)),
            ("source", .string(event.source)),
        ]
        if let error = event.error { fields.append(("error", .string("\(error)"))) }
        let reserved = Set(fields.map(\.key))
        for (key, value) in metadata {
            fields.append((reserved.contains(key) ? "metadata.\(key)" : key, Self.json(value)))
        }
        guard let line = try? Self.encoder.encode(JSONValue.object(fields)) else { return nil }
        return String(decoding: line, as: UTF8.self) + "\n"
    }

    /// Sorted keys: a line's fields in a stable order.
    private static let encoder: JSONEncoder = {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return encoder
    }()

    private static func json(_ value: Logger.Metadata.Value) -> JSONValue {
        switch value {
        case .string(let string): .string(string)
        case .stringConvertible(let convertible): .string(convertible.description)
        case .array(let values): .array(values.map(json))
        case .dictionary(let entries): .object(entries.map { ($0.key, json($0.value)) })
        }
    }
}
