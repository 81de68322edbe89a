import Foundation
import HeraldCore
public import Logging
import Synchronization

/// Writes one JSON object per line (keys sorted), for log shippers: `timestamp` (ISO 8601,
/// UTC, milliseconds), `level`, `logger` (the label), `message`, `source` (the module), and every
/// metadata entry as a field of its own (`herald.hub`, `herald.request.id`, …; an entry whose
/// name is taken by one of those is written as `metadata.<name>`).
///
/// `HERALD_LOG_FORMAT=json` selects it; the default stays the human-readable stream handler.
public struct JSONLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable (String) -> Void

    /// A handler that writes to standard error, as swift-log's default handler does.
    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil) {
        self.init(label: label, metadataProvider: metadataProvider) { line in
            Self.standardError.withLock { _ in FileHandle.standardError.write(Data(line.utf8)) }
        }
    }

    /// A handler that hands each line (with its newline) to `write`.
    public init(label: String, metadataProvider: Logger.MetadataProvider? = nil, write: @escaping @Sendable (String) -> Void) {
        self.label = label
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
        var fields: [(key: String, value: JSONValue)] = [
            ("timestamp", .string(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))),
            ("level", .string(event.level.rawValue)),
            ("logger", .string(label)),
            ("message", .string(event.message.description)),
            ("source", .string(event.source)),
        ]
        if let error = event.error { fields.append(("error", .string("\(error)"))) }
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let own = event.metadata { all.merge(own) { _, new in new } }
        let reserved = Set(fields.map(\.key))
        for (key, value) in all {
            fields.append((reserved.contains(key) ? "metadata.\(key)" : key, Self.json(value)))
        }
        guard let line = try? Self.encoder.encode(JSONValue.object(fields)) else { return }
        write(String(decoding: line, as: UTF8.self) + "\n")
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
