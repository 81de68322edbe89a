import Foundation
public import Logging
import Synchronization

/// Writes one JSON object per line, for log shippers: `timestamp` (ISO 8601, UTC,
/// milliseconds), `level`, `logger` (the label), `message`, `source` (the module), and every
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
        var fields: [(String, String)] = [
            ("timestamp", Self.quoted(Date().formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))),
            ("level", Self.quoted(event.level.rawValue)),
            ("logger", Self.quoted(label)),
            ("message", Self.quoted(event.message.description)),
            ("source", Self.quoted(event.source)),
        ]
        if let error = event.error { fields.append(("error", Self.quoted("\(error)"))) }
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let own = event.metadata { all.merge(own) { _, new in new } }
        let reserved = Set(fields.map(\.0))
        for (key, value) in all.sorted(by: { $0.key < $1.key }) {
            fields.append((reserved.contains(key) ? "metadata.\(key)" : key, Self.json(value)))
        }
        write("{" + fields.map { "\(Self.quoted($0.0)):\($0.1)" }.joined(separator: ",") + "}\n")
    }

    private static func json(_ value: Logger.Metadata.Value) -> String {
        switch value {
        case .string(let string): quoted(string)
        case .stringConvertible(let convertible): quoted(convertible.description)
        case .array(let values): "[" + values.map(json).joined(separator: ",") + "]"
        case .dictionary(let entries):
            "{" + entries.sorted { $0.key < $1.key }.map { "\(quoted($0.key)):\(json($0.value))" }.joined(separator: ",") + "}"
        }
    }

    /// A JSON string literal: quotes, backslashes and control characters escaped.
    static func quoted(_ string: String) -> String {
        var result = "\""
        result.reserveCapacity(string.utf8.count + 2)
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": result += "\\\""
            case "\\": result += "\\\\"
            case "\n": result += "\\n"
            case "\r": result += "\\r"
            case "\t": result += "\\t"
            case _ where scalar.value < 0x20 || scalar.value == 0x7f:
                result += String(format: "\\u%04x", scalar.value)
            default: result.unicodeScalars.append(scalar)
            }
        }
        return result + "\""
    }
}
