public import HeraldCore

/// An error of the PostgreSQL store that is not the caller's fault: a database that cannot be
/// reached or was migrated by a newer Herald, or a failure inside PostgreSQL.
///
/// Messages never contain SQL, a password or values a caller sent; PostgreSQL's own message is
/// logged at `.error` by the store instead. Equality compares the code only (``CodedError``).
public struct PostgresStoreError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case cannotConnect, schemaTooNew, database, corruptData
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        /// The server could not be reached, or refused the user, password or database.
        public static let cannotConnect = Code(.cannotConnect)
        /// The database was migrated by a newer version of Herald; this version refuses to touch it.
        public static let schemaTooNew = Code(.schemaTooNew)
        /// PostgreSQL reported an error.
        public static let database = Code(.database)
        /// A stored value could not be read back (an unknown platform, malformed JSON).
        public static let corruptData = Code(.corruptData)

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String
    /// For ``Code/cannotConnect``: the server answered and refused the user, the password or
    /// the database (nothing to wait for), rather than could not be reached.
    package let refusedByServer: Bool

    public init(code: Code, message: String) {
        self.init(code: code, message: message, refusedByServer: false)
    }

    package init(code: Code, message: String, refusedByServer: Bool) {
        self.code = code
        self.message = message
        self.refusedByServer = refusedByServer
    }
}
