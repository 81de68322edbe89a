import Foundation
import HeraldCore

#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// How the SDK's clients make a send: under an `Idempotency-Key` (the caller's, or a new
/// UUID), attempted again with the same request, and so the same key, when no answer came
/// (the connection broke) or the server answered that it could not take it now. A send that
/// reached the server the first time is then answered as it was (`Idempotent-Replayed: true`)
/// instead of being sent twice.
public struct SendRetry: Sendable, Hashable {
    /// How many times a send is attempted in all (1 for never again).
    public var attempts: Int
    /// The wait before the second attempt; each later one waits that much longer.
    public var delay: Duration

    public init(attempts: Int = 3, delay: Duration = .milliseconds(250)) {
        self.attempts = max(1, attempts)
        self.delay = delay
    }

    /// Three attempts, a quarter of a second apart, then half a second.
    public static let standard = SendRetry()
    /// One attempt: the caller retries (with the same key) itself.
    public static let never = SendRetry(attempts: 1)

    /// `request` with its `Idempotency-Key`: `key`, checked, or a new UUID.
    ///
    /// - Throws: `HeraldError.badRequest` for a key the server would refuse (empty, longer than
    ///   ``IdempotencyKey/maxLength``, not printable ASCII).
    static func keyed(_ request: URLRequest, key: String?) throws -> URLRequest {
        let key = key ?? UUID().uuidString.lowercased()
        try IdempotencyKey.validate(key)
        var request = request
        request.setValue(key, forHTTPHeaderField: IdempotencyKey.headerName)
        return request
    }

    /// Attempts `request` up to ``attempts`` times with `attempt`: again after an error that is
    /// not an answer (a `HeraldError` or cancellation ends it) and after an answer whose
    /// status is in `retryStatuses`; the last attempt's answer or error is the result.
    func perform(
        _ request: URLRequest,
        retryStatuses: Set<Int>,
        attempt: (URLRequest) async throws -> (Data, HTTPURLResponse)
    ) async throws -> (Data, HTTPURLResponse) {
        var number = 1
        while true {
            do {
                let (data, response) = try await attempt(request)
                if number < attempts, retryStatuses.contains(response.statusCode) {
                    number += 1
                    try await Task.sleep(for: delay * (number - 1))
                    continue
                }
                return (data, response)
            } catch let error where number < attempts && !(error is HeraldError) && !(error is CancellationError) {
                number += 1
                try await Task.sleep(for: delay * (number - 1))
            }
        }
    }
}
