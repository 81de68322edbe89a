import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldHubWire
import HeraldStore
import Hummingbird
import Logging
import NIOCore

/// Installations: one JSON document per app install, read back as soon as it is written.
extension HubAPIController {
    @Sendable func putInstallation(request: Request, context: AppRequestContext) async throws -> Response {
        let authorized = try await authorizeRequest(request, context: context, right: .listen)
        let engine = authorized.engine
        let id = try Self.pathParameter("id", context)
        let installation = try Installation.decodeWire(try await request.bodyData(limit: Self.maxBodyBytes))
        try authorized.checkTags(installation.allTags)
        guard installation.id == id else {
            throw HeraldError.badRequest("the installationId in the body (\(installation.id)) differs from the one in the URL (\(id))")
        }
        let saved = try await engine.saveInstallation(installation)
        context.logger.debug("Saved an installation", metadata: ["herald.platform": "\(saved.platform)"])
        return installationWritten(saved, request: request, context: context)
    }

    @Sendable func getInstallation(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .listen)
        let id = try Self.pathParameter("id", context)
        guard let installation = try await engine.installation(id: id) else {
            throw HeraldError.notFound("no installation with id \(id)")
        }
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        headers[.eTag] = #""\#(installation.version)""#
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: installation.wireJSON())))
    }

    @Sendable func patchInstallation(request: Request, context: AppRequestContext) async throws -> Response {
        let authorized = try await authorizeRequest(request, context: context, right: .listen)
        let id = try Self.pathParameter("id", context)
        let patch = try await request.bodyData(limit: Self.maxBodyBytes)
        let saved = try await authorized.engine.patchInstallation(id: id, patch: patch) { try authorized.checkTags($0.allTags) }
        return installationWritten(saved, request: request, context: context)
    }

    @Sendable func deleteInstallation(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .listen)
        let id = try Self.pathParameter("id", context)
        try await engine.deleteInstallation(id: id)
        return Response(status: .noContent)
    }

    /// `GET /{hub}/installations?userId=&tag=&$top=&continuationtoken=`: what the cloud hub
    /// never offered: installations listed and queried by user and tag.
    @Sendable func listInstallations(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let userId = request.formQuery("userId") ?? request.formQuery("userid")
        let tag = request.formQuery("tag")
        if let tag { try Tag.validate(tag) }
        let top = try Self.top(request)
        let cursor = try request.formQuery("continuationtoken").map(ContinuationToken.decode)
        let page = try await engine.installations(userID: userId, tag: tag, after: cursor, limit: top)
        var headers = HTTPFields()
        headers[.contentType] = "application/json; charset=utf-8"
        if page.count == top, let last = page.last {
            headers[HTTPField.Name("X-MS-ContinuationToken")!] = ContinuationToken.encode(last.id)
        }
        // A JSON array of the installations' wire documents, each as the single GET returns it.
        var body = Data("[".utf8)
        for (index, installation) in page.enumerated() {
            if index > 0 { body.append(UInt8(ascii: ",")) }
            body.append(installation.wireJSON())
        }
        body.append(UInt8(ascii: "]"))
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: body)))
    }

    private func installationWritten(_ installation: Installation, request: Request, context: AppRequestContext) -> Response {
        var headers = HTTPFields()
        headers[.contentLength] = "0"
        headers[.eTag] = #""\#(installation.version)""#
        headers[.contentLocation] = "\(requestURL(request))?api-version=\(Self.apiVersion)"
        return Response(status: .ok, headers: headers)
    }
}
