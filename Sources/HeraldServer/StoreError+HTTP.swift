public import HeraldCore
public import HeraldStore
public import Hummingbird

extension HeraldError {
    /// What a caller is told of `error`: a ``HeraldError`` as it is; a store's ``StoreError``
    /// as the caller-facing error that fits it (a lost lease or a taken name is a conflict, a database away
    /// for a moment is `unavailable`, a full disk `insufficientStorage`, an idempotency key
    /// reused for another request `unprocessableContent`); `nil` for anything
    /// else, which the caller sees as an internal error.
    ///
    /// The one place where the store's terms become HTTP-shaped ones.
    public init?(reporting error: any Error) {
        switch error {
        case let error as HeraldError:
            self = error
        case let error as StoreError:
            switch error.code {
            case .leaseLost, .nameTaken: self = .conflict(error.message)
            case .storageFull: self = .insufficientStorage(error.message)
            case .idempotencyKeyReused: self = .unprocessableContent(error.message)
            default: self = .unavailable(error.message)
            }
        default:
            return nil
        }
    }
}

/// A store's error that reaches a route answers as its ``HeraldError/init(reporting:)``.
extension StoreError: HTTPResponseError {
    public var status: HTTPResponse.Status { reported.status }

    public func response(from request: Request, context: some RequestContext) throws -> Response {
        try reported.response(from: request, context: context)
    }

    private var reported: HeraldError {
        HeraldError(reporting: self) ?? HeraldError(code: .internalError, message: "internal error")
    }
}
