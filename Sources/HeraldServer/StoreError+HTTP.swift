public import HeraldCore
public import HeraldStore
public import Hummingbird

extension HeraldError {
    /// What a caller is told of `error`: a ``HeraldError`` as it is; a store's ``StoreError``
    /// as the caller-facing error that fits it (a lost lease or a taken name is a conflict, a database away
    /// for a moment is `unavailable`, a full disk `insufficientStorage`, an idempotency key
    /// reused for another request `unprocessableContent`, a write whose version changed
    /// `preconditionFailed`); `nil` for a store's own failure
    /// (``StoreError/isInternal``: it cannot open or reach its database, a newer schema, a
    /// database error, corrupt data) and anything else, which the caller sees as an internal
    /// error.
    ///
    /// The one place where the store's terms become HTTP-shaped ones.
    public init?(reporting error: any Error) {
        switch error {
        case let error as HeraldError:
            self = error
        case let error as StoreError where !error.isInternal:
            switch error.code {
            case .leaseLost, .nameTaken: self = .conflict(error.message)
            case .storageFull: self = .insufficientStorage(error.message)
            case .idempotencyKeyReused: self = .unprocessableContent(error.message)
            case .versionMismatch: self = .preconditionFailed(error.message)
            default: self = .unavailable(error.message)
            }
        default:
            return nil
        }
    }
}

extension HeraldError {
    /// `error` as an `HTTPResponseError` that answers for itself, or `nil` for an error a
    /// caller sees as an internal error (and the server logs): anything that is not an
    /// `HTTPResponseError`, and a store's own failure (``StoreError/isInternal``).
    package static func answering(_ error: any Error) -> (any HTTPResponseError)? {
        if let error = error as? StoreError, error.isInternal { return nil }
        return error as? any HTTPResponseError
    }
}

/// A store's error that reaches a route answers as its ``HeraldError/init(reporting:)`` (a
/// store's own failure as an internal error: see ``HeraldError/answering(_:)``).
extension StoreError: HTTPResponseError {
    public var status: HTTPResponse.Status { reported.status }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try reported.response(from: request, context: context)
    }

    private var reported: HeraldError {
        HeraldError(reporting: self) ?? HeraldError(code: .internalError, message: "internal error")
    }
}
