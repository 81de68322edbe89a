public import HeraldCore
import HeraldStore

/// An error of the SQLite store that is not the caller's fault: a database that cannot be
/// opened or was written by a newer Herald, or a failure inside SQLite.
///
/// Messages never contain SQL or values a caller sent; SQLite's own message is logged at
/// `.error` by the store instead. Equality compares the code only (``CodedError``).
public struct SQLiteStoreError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case cannotOpen, schemaTooNew, database, corruptData
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The file could not be opened or is not a Herald database.
        public static let cannotOpen = Code(.cannotOpen)
        /// The file was migrated by a newer version of Herald; this version refuses to touch it.
        public static let schemaTooNew = Code(.schemaTooNew)
        /// SQLite reported an error (I/O, disk full, constraint, …).
        public static let database = Code(.database)
        /// A stored value could not be read back (an unknown platform, malformed JSON).
        public static let corruptData = Code(.corruptData)

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

}
