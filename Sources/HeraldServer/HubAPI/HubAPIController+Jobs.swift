import Foundation
import HTTPTypes
import HeraldCore
import HeraldHub
import HeraldHubWire
import Hummingbird
import Logging
import NIOCore

/// Export and import jobs, with the Manage right.
///
/// The cloud hub reads an import's input from a blob and writes every job's output to a blob
/// container the client names. Herald keeps both in the hub's store instead, as the hub's
/// *job files*, under `/{hub}/jobs`, which the answers name as the job's `OutputContainerUri`:
///
/// - `PUT /{hub}/jobs/files/{name}` uploads an import's input; its URL
///   (`…/{hub}/jobs/files/{name}`) is then the job's `ImportFileUri`. An export's output
///   (`…/{hub}/jobs/{id}/Output.txt`) is an import's input as it is.
/// - `GET /{hub}/jobs/{id}/Output.txt` and `…/Failed.txt` download a job's output and the lines
///   it could not apply (`OutputProperties`' `OutputFilePath` and `FailedFilePath`, relative
///   to the container).
extension HubAPIController {
    /// The most jobs `GET /{hub}/jobs` lists: the newest.
    static let maxJobsListed = 100

    @Sendable func submitJob(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .manage)
        let submitted = try NotificationHubJobDocument.parseRequest(try await request.bodyData(limit: Self.maxBodyBytes))
        var inputFile: String?
        if let uri = submitted.importFileURI {
            let file = try Self.jobFileName(importFileURI: uri, hub: name)
            guard try await engine.jobFileContents(named: file) != nil else {
                throw HeraldError.badRequest(
                    "ImportFileUri names the job file '\(file)', which hub \(name) does not have; upload it first with PUT /\(name)/jobs/files/{name}"
                )
            }
            inputFile = file
        }
        let job = try await engine.submitJob(kind: submitted.kind, inputFile: inputFile)
        context.logger.info("Submitted a job", metadata: ["herald.job.id": "\(job.id)", "herald.job.type": "\(job.kind.rawValue)"])
        var headers = HTTPFields()
        headers[.location] = "\(hubURL(request, hub: name))/jobs/\(job.id)?api-version=\(Self.apiVersion)"
        return .xml(jobEntry(job, request: request, hub: name), status: .created, contentType: Self.entryContentType, headers: headers)
    }

    @Sendable func getJob(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .manage)
        let id = try Self.pathParameter("id", context)
        guard let job = try await engine.job(id: id) else { throw HeraldError.notFound("no job with id \(id)") }
        return .xml(jobEntry(job, request: request, hub: name), contentType: Self.entryContentType)
    }

    @Sendable func listJobs(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .manage)
        let jobs = try await engine.jobs(limit: Self.maxJobsListed)
        let feed = NotificationHubJobDocument.feed(
            jobs.map { ($0, locations($0, request: request, hub: name)) }, hubURL: hubURL(request, hub: name), apiVersion: Self.apiVersion
        )
        return .xml(feed, contentType: "application/atom+xml;type=feed;charset=utf-8")
    }

    /// `PUT /{hub}/jobs/files/{name}`: an import's input, kept in the hub's store. The body is
    /// streamed into the store a chunk at a time, never held whole; past the largest file
    /// (`413`) or the hub's job storage quota (`403`) the upload stops and nothing is kept.
    /// A file of the same name is replaced only once the new one is complete.
    @Sendable func uploadJobFile(request: Request, context: AppRequestContext) async throws -> Response {
        let (name, engine) = try await authorize(request, context: context, right: .manage)
        let file = try Self.pathParameter("name", context)
        guard HubJob.isValidFileName(file) else {
            throw HeraldError.badRequest("a job file's name is 1–128 letters, digits, '-', '_' and '.', not starting with '.'; '\(file.prefix(40))' is not")
        }
        let limit = engine.configuration.maxJobFileBytes
        if let declared = request.headers[.contentLength].flatMap(Int.init), declared > limit {
            throw HeraldError.payloadTooLarge("a job file is at most \(limit) bytes (\(limit / 1024 / 1024) MiB); this one is \(declared)")
        }
        var upload = try await engine.beginJobFileUpload(name: file)
        do {
            for try await buffer in request.body {
                try await upload.append(buffer.readableBytesView)
            }
            try await upload.commit(now: now())
        } catch {
            await upload.discard()
            throw error
        }
        context.logger.debug("Stored a job file", metadata: ["herald.job.file.size": "\(upload.size)"])
        var headers = HTTPFields()
        headers[.location] = "\(hubURL(request, hub: name))/jobs/files/\(file)"
        headers[.contentLength] = "0"
        return Response(status: .created, headers: headers)
    }

    /// `GET /{hub}/jobs/files/{name}`: an uploaded job file, streamed from its chunks.
    @Sendable func downloadJobFile(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let file = try Self.pathParameter("name", context)
        guard HubJob.isValidFileName(file), let contents = try await engine.jobFileContents(named: file) else {
            throw HeraldError.notFound("no job file named \(file.prefix(128))")
        }
        return Self.textFile(contents)
    }

    /// `GET /{hub}/jobs/{id}/Output.txt` and `…/Failed.txt`: what a job wrote, streamed from
    /// the chunks its pages saved.
    @Sendable func downloadJobOutput(request: Request, context: AppRequestContext) async throws -> Response {
        let (_, engine) = try await authorize(request, context: context, right: .manage)
        let id = try Self.pathParameter("id", context)
        let file = try Self.pathParameter("file", context)
        guard file == HubJob.outputFile || file == HubJob.failuresFile else {
            throw HeraldError.notFound("a job has two files, \(HubJob.outputFile) and \(HubJob.failuresFile); \(file.prefix(40)) is neither")
        }
        guard let contents = try await engine.jobFileContents(named: "\(id)/\(file)") else { throw HeraldError.notFound("no job with id \(id)") }
        return Self.textFile(contents)
    }

    static let entryContentType = "application/atom+xml;type=entry;charset=utf-8"

    /// A job file's chunks as the body, one at a time, with its length: a chunk that vanished
    /// meanwhile (replaced, swept) cuts the body short, which the client sees by its length.
    private static func textFile(_ contents: JobFileContents) -> Response {
        Response(
            status: .ok,
            headers: [.contentType: "text/plain; charset=utf-8"],
            body: ResponseBody(contentLength: contents.size) { writer in
                try await contents.forEachChunk { try await writer.write(ByteBuffer(bytes: $0)) }
                try await writer.finish(nil)
            }
        )
    }

    private func jobEntry(_ job: HubJob, request: Request, hub: String) -> Data {
        NotificationHubJobDocument.entry(
            job, hubURL: hubURL(request, hub: hub), locations: locations(job, request: request, hub: hub), apiVersion: Self.apiVersion)
    }

    /// The container of a hub's job files, and the URL of a job's input.
    private func locations(_ job: HubJob, request: Request, hub: String) -> NotificationHubJobDocument.Locations {
        let container = "\(hubURL(request, hub: hub))/jobs"
        let input = job.inputFile.map { $0.contains("/") ? "\(container)/\($0)" : "\(container)/files/\($0)" }
        return NotificationHubJobDocument.Locations(containerURL: container, importFileURL: input)
    }

    /// The job file an `ImportFileUri` names: `…/{hub}/jobs/files/{name}` (an upload) or
    /// `…/{hub}/jobs/{id}/Output.txt` (an export's output). Only the path counts, so the URL may
    /// name the host as any client reaches it.
    static func jobFileName(importFileURI uri: String, hub: String) throws -> String {
        let path = URLComponents(string: uri)?.percentEncodedPath.percentDecoded() ?? ""
        let parts = path.split(separator: "/", omittingEmptySubsequences: true).map(String.init)
        let usage =
            "ImportFileUri must be the URL of one of hub \(hub)'s job files: …/\(hub)/jobs/files/{name} (uploaded with PUT), or …/\(hub)/jobs/{id}/Output.txt (an export's output)"
        guard parts.count >= 4, parts[parts.count - 4].caseInsensitiveCompare(hub) == .orderedSame, parts[parts.count - 3] == "jobs" else {
            throw HeraldError.badRequest(usage)
        }
        let (folder, file) = (parts[parts.count - 2], parts[parts.count - 1])
        if folder == "files", HubJob.isValidFileName(file) { return file }
        if file == HubJob.outputFile, HubJob.isValidFileName(folder) { return "\(folder)/\(file)" }
        throw HeraldError.badRequest(usage)
    }
}
