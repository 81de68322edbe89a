import Foundation
public import Logging
import Synchronization

/// Writes human-readable lines, as swift-log's stream handler does
/// (`2026-11-28T23:42:37+0000 info herald: herald.hub=main [HeraldServer] Message`), on
/// standard error: `HERALD_LOG_FORMAT=text`, the default.
///
/// The stream handler writes out the logger's metadata each time an entry is set, and a
/// request sets two or three (its id, its user) whether or not it logs anything. This handler
/// writes the metadata out when a line is logged, and only then.
public struct TextLogHandler: LogHandler {
    public var logLevel: Logger.Level = .info
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable (String) -> Void

    /// A handler that writes to standard error.
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
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { _, new in new } }
        if let own = event.metadata { all.merge(own) { _, new in new } }
        if let error = event.error {
            all["error.message"] = "\(error)"
            all["error.type"] = "\(String(reflecting: type(of: error)))"
        }
        var line = Self.timestamp() + " \(event.level)" + (label.isEmpty ? "" : " ") + label + ":"
        for (key, value) in all.sorted(by: { $0.key < $1.key }) { line += " \(key)=\(value)" }
        line += " [\(event.source)] \(event.message)\n"
        write(line)
    }

    /// The local time to the second, with its offset from UTC.
    private static func timestamp() -> String {
        var now = time(nil)
        var local = tm()
        guard localtime_r(&now, &local) != nil else { return "<unknown>" }
        var buffer = [CChar](repeating: 0, count: 64)
        let count = strftime(&buffer, buffer.count, "%Y-%m-%dT%H:%M:%S%z", &local)
        return String(decoding: buffer.prefix(count).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}
