import Foundation
import HeraldCore
import NIOCore
import NIOSSL

/// The broadcast channel management API of the APNs emulator, on a port of its own as
/// `api-manage-broadcast.push.apple.com:2196` is: create (`POST /1/apps/{bundle id}/channels`,
/// 201 with `apns-channel-id`), read and delete (`GET`/`DELETE` on the same path with
/// `apns-channel-id`; 200 with the channel's configuration, 204), list
/// (`GET /1/apps/{bundle id}/all-channels`, `{"channels": [...]}`), authenticated as the APNs
/// endpoint is, with APNs' reasons for what is wrong.
final class APNsBroadcastResponder: EmulatorResponder {
    typealias ConnectionState = APNsAuthenticator.ConnectionState

    private struct ChannelConfiguration: Codable {
        var messageStoragePolicy: Int
        var pushType: String

        enum CodingKeys: String, CodingKey {
            case messageStoragePolicy = "message-storage-policy"
            case pushType = "push-type"
        }
    }

    private struct ChannelList: Encodable {
        var channels: [String]
    }

    private let apns: APNsResponder

    init(apns: APNsResponder) {
        self.apns = apns
    }

    func makeConnectionState() -> ConnectionState { ConnectionState() }

    func makeConnectionState(clientCertificate: NIOSSLCertificate?) -> ConnectionState {
        apns.authenticator.makeConnectionState(clientCertificate: clientCertificate)
    }

    func respond(
        to request: EmulatorRequest, state: inout ConnectionState, allocator: ByteBufferAllocator
    )
        -> EmulatorResponse
    {
        func refuse(_ status: Int, _ reason: APNsReason) -> EmulatorResponse {
            apns.error(status, reason, request: request, idHeader: "apns-request-id")
        }
        // /1/apps/{bundle id}/channels or /1/apps/{bundle id}/all-channels
        let segments = request.path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 5, segments[0].isEmpty, segments[1] == "1", segments[2] == "apps", !segments[3].isEmpty,
            segments[4] == "channels" || segments[4] == "all-channels"
        else { return refuse(404, .badPath) }
        let topic = String(segments[3])
        let listing = segments[4] == "all-channels"
        let allowed = listing ? ["GET"] : ["POST", "GET", "DELETE"]
        guard allowed.contains(request.method) else { return refuse(405, .methodNotAllowed) }

        let configuration = apns.configuration
        switch apns.authenticator.authenticate(request.headers.first("authorization"), state: &state, now: configuration.now()) {
        case .failure(let failure): return refuse(failure.status, failure.reason)
        case .success(.certificate(let certificateTopic)) where certificateTopic != topic: return refuse(403, .topicMismatch)
        case .success: break
        }
        if !configuration.topics.isEmpty, !configuration.topics.contains(topic) { return refuse(403, .topicMismatch) }
        if let requestID = request.headers.first("apns-request-id"), UUID(uuidString: requestID) == nil {
            return refuse(400, .badMessageId)
        }
        let requestID = request.headers.first("apns-request-id") ?? RandomIdentifier.uuid()
        let registry = apns.liveActivities

        if listing {
            return json(200, ChannelList(channels: registry.channelIDs(topic: topic)), requestID: requestID, allocator: allocator)
        }
        if request.method == "POST" {
            let created: ChannelConfiguration
            switch Self.channelConfiguration(request.body) {
            case .success(let configuration): created = configuration
            case .failure(let failure): return refuse(failure.status, failure.reason)
            }
            do {
                let id = try registry.createChannel(
                    topic: topic, messageStoragePolicy: created.messageStoragePolicy, limit: configuration.channelLimit)
                return EmulatorResponse(status: 201, headers: [("apns-request-id", requestID), ("apns-channel-id", id)])
            } catch {
                return refuse(error.status, error.reason)
            }
        }
        let channelID: String
        switch APNsResponder.channelID(of: request) {
        case .success(let id): channelID = id
        case .failure(let failure): return refuse(failure.status, failure.reason)
        }
        if request.method == "DELETE" {
            guard registry.deleteChannel(id: channelID, topic: topic) else { return refuse(400, .channelNotRegistered) }
            return EmulatorResponse(status: 204, headers: [("apns-request-id", requestID)])
        }
        guard let channel = registry.channel(id: channelID, topic: topic) else { return refuse(400, .channelNotRegistered) }
        let body = ChannelConfiguration(messageStoragePolicy: channel.messageStoragePolicy, pushType: "LiveActivity")
        return json(200, body, requestID: requestID, allocator: allocator)
    }

    /// The body of a create request: `{"message-storage-policy": 0|1, "push-type": "LiveActivity"}`.
    private static func channelConfiguration(_ body: ByteBuffer?) -> Result<ChannelConfiguration, LiveActivityRegistry.Refusal> {
        guard let body, body.readableBytes > 0 else { return .failure(.init(status: 400, reason: .payloadEmpty)) }
        guard let value = try? JSONValue(parsing: body.readableBytesView),
            case .object(let members) = value
        else { return .failure(.init(status: 400, reason: .badRequestPayload)) }
        let known: Set<String> = ["message-storage-policy", "push-type"]
        guard members.allSatisfy({ known.contains($0.key) }) else {
            return .failure(.init(status: 400, reason: .badRequestParams))
        }
        guard let pushType = value["push-type"] else { return .failure(.init(status: 400, reason: .missingPushType)) }
        guard case .string(let name) = pushType, name.lowercased() == "liveactivity" else {
            return .failure(.init(status: 400, reason: .invalidPushType))
        }
        guard case .number(let policy) = value["message-storage-policy"], policy == 0 || policy == 1 else {
            return .failure(.init(status: 400, reason: .badRequestParams))
        }
        return .success(ChannelConfiguration(messageStoragePolicy: Int(policy), pushType: "LiveActivity"))
    }

    private func json(
        _ status: Int, _ value: some Encodable, requestID: String, allocator: ByteBufferAllocator
    )
        -> EmulatorResponse
    {
        var response = EmulatorControlAPI.json(status, value, allocator: allocator)
        response.headers.insert(("apns-request-id", requestID), at: 0)
        return response
    }
}
