public import Foundation
public import HeraldCore

/// The hub API's export and import jobs in Atom XML: the `NotificationHubJob` entry an SDK
/// posts to `POST /{hub}/jobs`, and the entries and feed the hub answers with.
///
/// ```xml
/// <entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">
///   <NotificationHubJob xmlns:i="…" xmlns="…/servicebus/connect">
///     <JobId>…</JobId><Progress>100</Progress><Type>ExportRegistrations</Type><Status>Completed</Status>
///     <OutputContainerUri>https://host/hub/jobs</OutputContainerUri>
///     <OutputProperties xmlns:d3p1="http://schemas.microsoft.com/2003/10/Serialization/Arrays">
///       <d3p1:KeyValueOfstringstring><d3p1:Key>OutputFilePath</d3p1:Key><d3p1:Value>…/Output.txt</d3p1:Value></d3p1:KeyValueOfstringstring>
///     </OutputProperties>
///     <CreatedAt>…</CreatedAt><UpdatedAt>…</UpdatedAt>
///   </NotificationHubJob>
/// </content></entry>
/// ```
///
/// Members are written in the order of the .NET SDK's data contract: `JobId`, `Progress`,
/// `Type`, `Status`, `OutputContainerUri`, `ImportFileUri`, `InputProperties`, `Failure`,
/// `OutputProperties`, `CreatedAt`, `UpdatedAt`.
public enum NotificationHubJobDocument {
    /// What a client asks for when it submits a job.
    public struct Request: Sendable, Hashable {
        public var kind: HubJob.Kind
        /// Where the client wants the output; Herald writes it to the hub's job files instead.
        public var outputContainerURI: String?
        /// The input of an import.
        public var importFileURI: String?

        public init(kind: HubJob.Kind, outputContainerURI: String? = nil, importFileURI: String? = nil) {
            self.kind = kind
            self.outputContainerURI = outputContainerURI
            self.importFileURI = importFileURI
        }
    }

    /// The namespace of the `KeyValueOfstringstring` pairs of `OutputProperties`.
    static let arraysNamespace = "http://schemas.microsoft.com/2003/10/Serialization/Arrays"

    /// Reads a submitted job: an Atom entry whose content holds a `NotificationHubJob`, or the
    /// bare element.
    ///
    /// - Throws: a `400` ``HeraldError`` naming what is wrong: malformed XML, no or an unknown
    ///   `Type`, an import without `ImportFileUri`.
    public static func parseRequest(_ body: Data) throws(HeraldError) -> Request {
        let root = try ParsedXMLElement.parse(body, document: "job")
        let job: ParsedXMLElement
        switch root.name {
        case "entry":
            guard let element = root.child("content")?.child("NotificationHubJob") else {
                throw .badRequest("the Atom entry's <content> must hold a <NotificationHubJob> element")
            }
            job = element
        case "NotificationHubJob":
            job = root
        default:
            throw .badRequest("expected an Atom <entry> holding a <NotificationHubJob>; found <\(root.name)>")
        }
        let kinds = HubJob.Kind.allCases.map(\.rawValue).joined(separator: ", ")
        guard let typeName = job.nonEmptyValue("Type") else {
            throw .badRequest("the job needs a <Type>: one of \(kinds)")
        }
        guard let kind = HubJob.Kind(wireName: typeName) else {
            throw .badRequest("unknown job <Type> '\(typeName.prefix(60))': use one of \(kinds)")
        }
        let request = Request(
            kind: kind,
            outputContainerURI: job.nonEmptyValue("OutputContainerUri"),
            importFileURI: job.nonEmptyValue("ImportFileUri")
        )
        if kind.importMode != nil, request.importFileURI == nil {
            throw .badRequest("\(kind.rawValue) needs an <ImportFileUri>: the URL of the file of registrations to import")
        }
        return request
    }

    /// Where a job's files are, as the answers name them.
    public struct Locations: Sendable, Hashable {
        /// The URL of the hub's job files (the "container"), e.g. `https://host/hub/jobs`.
        public var containerURL: String
        /// The URL of the import's input, if any.
        public var importFileURL: String?

        public init(containerURL: String, importFileURL: String? = nil) {
            self.containerURL = containerURL
            self.importFileURL = importFileURL
        }
    }

    /// The entry the hub answers `POST /{hub}/jobs` and `GET /{hub}/jobs/{id}` with.
    public static func entry(_ job: HubJob, hubURL: String, locations: Locations, apiVersion: String = RegistrationDescription.defaultAPIVersion) -> Data {
        var xml = WireXMLWriter()
        writeEntry(job, hubURL: hubURL, locations: locations, apiVersion: apiVersion, declaresAtom: true, into: &xml)
        return xml.data
    }

    /// The feed `GET /{hub}/jobs` answers with.
    public static func feed(
        _ jobs: [(job: HubJob, locations: Locations)],
        hubURL: String,
        apiVersion: String = RegistrationDescription.defaultAPIVersion,
        updated: Date = Date()
    ) -> Data {
        var xml = WireXMLWriter()
        let selfURL = "\(hubURL)/jobs?api-version=\(apiVersion)"
        xml.start("feed", attributes: [("xmlns", HubWireNamespace.atom)])
        xml.start("title", attributes: [("type", "text")])
        xml.text("jobs")
        xml.end()
        xml.element("id", selfURL)
        xml.element("updated", XSDDateTime.string(from: updated))
        xml.empty("link", attributes: [("rel", "self"), ("href", selfURL)])
        for (job, locations) in jobs {
            writeEntry(job, hubURL: hubURL, locations: locations, apiVersion: apiVersion, declaresAtom: false, into: &xml)
        }
        xml.end()
        return xml.data
    }

    /// The `NotificationHubJob` entry an SDK posts (the Swift SDK and tests use it).
    public static func request(_ request: Request) -> Data {
        var xml = WireXMLWriter()
        xml.start("entry", attributes: [("xmlns", HubWireNamespace.atom)])
        xml.start("content", attributes: [("type", "application/xml")])
        xml.start("NotificationHubJob", attributes: HubWireNamespace.descriptionAttributes)
        xml.element("Type", request.kind.rawValue)
        xml.element("OutputContainerUri", ifPresent: request.outputContainerURI)
        xml.element("ImportFileUri", ifPresent: request.importFileURI)
        xml.end()
        xml.end()
        xml.end()
        return xml.data
    }

    static func writeEntry(
        _ job: HubJob,
        hubURL: String,
        locations: Locations,
        apiVersion: String,
        declaresAtom: Bool,
        into xml: inout WireXMLWriter
    ) {
        xml.start("entry", attributes: declaresAtom ? [("xmlns", HubWireNamespace.atom)] : [])
        let url = "\(hubURL)/jobs/\(job.id)?api-version=\(apiVersion)"
        xml.element("id", url)
        xml.start("title", attributes: [("type", "text")])
        xml.text(job.id)
        xml.end()
        xml.element("published", XSDDateTime.string(from: job.createdAt))
        xml.element("updated", XSDDateTime.string(from: job.updatedAt))
        xml.empty("link", attributes: [("rel", "self"), ("href", url)])
        xml.start("content", attributes: [("type", "application/xml")])
        xml.start("NotificationHubJob", attributes: HubWireNamespace.descriptionAttributes)
        xml.element("JobId", job.id)
        xml.element("Progress", progressText(job.progress))
        xml.element("Type", job.kind.rawValue)
        xml.element("Status", job.state.rawValue)
        xml.element("OutputContainerUri", locations.containerURL)
        xml.element("ImportFileUri", ifPresent: locations.importFileURL)
        xml.element("Failure", ifPresent: job.failure)
        xml.start("OutputProperties", attributes: [("xmlns:d3p1", arraysNamespace)])
        for (key, value) in [
            ("OutputFilePath", HubJob.outputFileName(jobID: job.id)), ("FailedFilePath", HubJob.failuresFileName(jobID: job.id)),
            ("Succeeded", String(job.succeeded)), ("Failed", String(job.failed)),
        ] {
            xml.start("d3p1:KeyValueOfstringstring")
            xml.element("d3p1:Key", key)
            xml.element("d3p1:Value", value)
            xml.end()
        }
        xml.end()
        xml.element("CreatedAt", XSDDateTime.string(from: job.createdAt, precision: .milliseconds))
        xml.element("UpdatedAt", XSDDateTime.string(from: job.updatedAt, precision: .milliseconds))
        xml.end()
        xml.end()
        xml.end()
    }

    /// `37.5`, `100`: a decimal without trailing zeros.
    static func progressText(_ progress: Double) -> String {
        progress == progress.rounded() ? String(Int(progress)) : String(format: "%.2f", progress)
    }

    /// Reads a job entry the hub answered with (the Swift SDK and tests use it).
    public static func parseEntry(_ body: Data) throws(HeraldError) -> (job: HubJob, outputProperties: [String: String]) {
        let root = try ParsedXMLElement.parse(body, document: "job entry")
        guard root.name == "entry" else { throw .badRequest("expected an Atom <entry> holding a job; found <\(root.name)>") }
        return try job(fromEntry: root)
    }

    /// Reads every entry of a jobs feed.
    public static func parseFeed(_ body: Data) throws(HeraldError) -> [HubJob] {
        let root = try ParsedXMLElement.parse(body, document: "job feed")
        guard root.name == "feed" else { throw .badRequest("expected an Atom <feed> of jobs; found <\(root.name)>") }
        var jobs: [HubJob] = []
        for entry in root.children("entry") { jobs.append(try job(fromEntry: entry).job) }
        return jobs
    }

    static func job(fromEntry entry: ParsedXMLElement) throws(HeraldError) -> (job: HubJob, outputProperties: [String: String]) {
        guard let element = entry.child("content")?.child("NotificationHubJob") else {
            throw .badRequest("the entry holds no <NotificationHubJob>")
        }
        guard let id = element.nonEmptyValue("JobId"), let kind = element.nonEmptyValue("Type").flatMap(HubJob.Kind.init(wireName:)),
            let state = element.nonEmptyValue("Status").flatMap(HubJob.State.init(rawValue:))
        else {
            throw .badRequest("the <NotificationHubJob> lacks a JobId, a known Type or a known Status")
        }
        var properties: [String: String] = [:]
        for pair in element.child("OutputProperties")?.children ?? [] {
            if let key = pair.value("Key") { properties[key] = pair.value("Value") ?? "" }
        }
        var job = HubJob(id: id, kind: kind, state: state, failure: element.nonEmptyValue("Failure"))
        job.succeeded = properties["Succeeded"].flatMap { Int($0) } ?? 0
        job.failed = properties["Failed"].flatMap { Int($0) } ?? 0
        if let created = element.nonEmptyValue("CreatedAt").flatMap(XSDDateTime.date(from:)) { job.createdAt = created }
        if let updated = element.nonEmptyValue("UpdatedAt").flatMap(XSDDateTime.date(from:)) { job.updatedAt = updated }
        return (job, properties)
    }
}
