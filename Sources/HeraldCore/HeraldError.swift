/// An error that Herald reports to a caller: a code that maps to an HTTP status, and a
/// message safe to show to that caller.
///
/// Messages never contain secrets (keys, tokens, secure payloads). Equality compares the
/// code only (``CodedError``).
public struct HeraldError: CodedError {
    public struct Code: Hashable, Sendable, CustomStringConvertible {
        private enum Base: String, Hashable, Sendable {
            case badRequest, unauthorized, forbidden, notFound, gone, conflict
            case preconditionFailed, payloadTooLarge, unsupportedMediaType, unprocessableContent, tooManyRequests
            case unavailable, insufficientStorage, internalError
        }
        private let base: Base
        private init(_ base: Base) { self.base = base }

        public static let badRequest = Code(.badRequest)
        public static let unauthorized = Code(.unauthorized)
        public static let forbidden = Code(.forbidden)
        public static let notFound = Code(.notFound)
        public static let gone = Code(.gone)
        public static let conflict = Code(.conflict)
        public static let preconditionFailed = Code(.preconditionFailed)
        public static let payloadTooLarge = Code(.payloadTooLarge)
        public static let unsupportedMediaType = Code(.unsupportedMediaType)
        /// The request is well formed but cannot be carried out as it stands: an
        /// `Idempotency-Key` used before for another request.
        public static let unprocessableContent = Code(.unprocessableContent)
        public static let tooManyRequests = Code(.tooManyRequests)
        public static let unavailable = Code(.unavailable)
        /// The store cannot write: its disk is full. Nothing was written; retry once there is room.
        public static let insufficientStorage = Code(.insufficientStorage)
        public static let internalError = Code(.internalError)

        /// The HTTP status code that reports this error.
        public var httpStatus: Int {
            switch base {
            case .badRequest: 400
            case .unauthorized: 401
            case .forbidden: 403
            case .notFound: 404
            case .conflict: 409
            case .gone: 410
            case .preconditionFailed: 412
            case .payloadTooLarge: 413
            case .unsupportedMediaType: 415
            case .unprocessableContent: 422
            case .tooManyRequests: 429
            case .unavailable: 503
            case .insufficientStorage: 507
            case .internalError: 500
            }
        }

        /// A short name, safe as a metric label.
        public var description: String { base.rawValue }
    }

    public let code: Code
    public let message: String

    public init(code: Code, message: String) {
        self.code = code
        self.message = message
    }

    public static func badRequest(_ message: String) -> HeraldError { .init(code: .badRequest, message: message) }
    public static func unauthorized(_ message: String) -> HeraldError { .init(code: .unauthorized, message: message) }
    public static func forbidden(_ message: String) -> HeraldError { .init(code: .forbidden, message: message) }
    public static func notFound(_ message: String) -> HeraldError { .init(code: .notFound, message: message) }
    public static func gone(_ message: String) -> HeraldError { .init(code: .gone, message: message) }
    public static func conflict(_ message: String) -> HeraldError { .init(code: .conflict, message: message) }
    public static func preconditionFailed(_ message: String) -> HeraldError { .init(code: .preconditionFailed, message: message) }
    public static func payloadTooLarge(_ message: String) -> HeraldError { .init(code: .payloadTooLarge, message: message) }
    public static func unprocessableContent(_ message: String) -> HeraldError { .init(code: .unprocessableContent, message: message) }
    public static func tooManyRequests(_ message: String) -> HeraldError { .init(code: .tooManyRequests, message: message) }
    public static func unavailable(_ message: String) -> HeraldError { .init(code: .unavailable, message: message) }
    public static func insufficientStorage(_ message: String) -> HeraldError { .init(code: .insufficientStorage, message: message) }
}
