import AsyncHTTPClient
import HeraldCore
import Logging
import NIOHTTP1

extension WNSProvider: HTTPPushService {
    var serviceName: String { "WNS" }

    /// `X-WNS-Status`, lowercased. The rest of the answer is in the headers too; the body is
    /// drained (WNS sends none worth reading).
    func answer(to response: HTTPClientResponse) async -> WNSStatus? {
        do { _ = try await response.body.collect(upTo: 64 * 1024) } catch {}
        return response.headers.first(name: "x-wns-status").map { WNSStatus($0.lowercased()) }
    }

    func classify(status: Int, answer wnsStatus: WNSStatus?, headers: HTTPHeaders, retryAfter: Double?) -> PushResult {
        Self.classify(
            status: status,
            wnsStatus: wnsStatus,
            errorDescription: headers.first(name: "x-wns-error-description"),
            retryAfter: retryAfter
        )
    }

    func metadata(status: Int, answer wnsStatus: WNSStatus?, headers: HTTPHeaders) -> Logger.Metadata {
        [
            "wns.status": "\(status)",
            "wns.notification_status": "\(wnsStatus?.rawValue ?? "")",
            "wns.device_connection_status": "\(headers.first(name: "x-wns-deviceconnectionstatus") ?? "")",
            "wns.msg_id": "\(headers.first(name: "x-wns-msg-id") ?? "")",
        ]
    }
}
