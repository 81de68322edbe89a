public import Logging
import Synchronization

/// Keeps every record logged through ``logger``, for tests that look at what was logged (a
/// warning said, or a secret never said).
public final class LogRecorder: Sendable {
    public struct Record: Sendable, CustomStringConvertible {
        public var level: Logger.Level
        public var message: String
        public var metadata: [String: String]
        /// The error logged with the record, as `String(reflecting:)` shows it.
        public var error: String?

        public var description: String { "\(level) \(message) \(metadata.sorted { $0.key < $1.key }) \(error ?? "")" }
    }

    private let records = Mutex<[Record]>([])

    public init() {}

    public var all: [Record] { records.withLock { $0 } }

    /// Every record as a line of text, with its metadata and error.
    public var text: String { all.map(\.description).joined(separator: "\n") }

    /// A logger at `.trace` that records here.
    public func logger(label: String = "herald.tests") -> Logger {
        Logger(label: label) { _ in Handler(recorder: self) }
    }

    private struct Handler: LogHandler {
        let recorder: LogRecorder
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .trace

        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }

        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { _, new in new }
            let record = Record(
                level: event.level, message: "\(event.message)", metadata: merged.mapValues { "\($0)" },
                error: event.error.map { String(reflecting: $0) })
            recorder.records.withLock { $0.append(record) }
        }
    }
}
