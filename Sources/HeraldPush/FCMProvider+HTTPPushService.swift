import AsyncHTTPClient
import Foundation
import HeraldCore
import Logging
import NIOCore
import NIOHTTP1

extension FCMProvider: HTTPPushService {
    var serviceName: String { "FCM" }

    /// The error code of a response that is not a 200: `error.details[].errorCode`, else
    /// `error.status`.
    func answer(to response: HTTPClientResponse) async -> FCMErrorCode? {
        guard response.status.code != 200 else {
            do { for try await _ in response.body {} } catch {}
            return nil
        }
        guard let bytes = try? await response.body.collect(upTo: 256 * 1024) else { return nil }
        return Self.errorCode(fromBody: Data(bytes.readableBytesView))
    }

    /// `THIRD_PARTY_AUTH_ERROR` is about the APNs or web push credentials behind FCM, which a
    /// new access token does not change.
    func mayBeStaleCredential(_ errorCode: FCMErrorCode?) -> Bool {
        errorCode != .thirdPartyAuthError
    }

    func classify(status: Int, answer errorCode: FCMErrorCode?, headers: HTTPHeaders, retryAfter: Double?) -> PushResult {
        Self.classify(status: status, errorCode: errorCode, retryAfter: retryAfter)
    }

    func metadata(status: Int, answer errorCode: FCMErrorCode?, headers: HTTPHeaders) -> Logger.Metadata {
        ["fcm.status": "\(status)", "fcm.error_code": "\(errorCode?.rawValue ?? "")"]
    }
}
