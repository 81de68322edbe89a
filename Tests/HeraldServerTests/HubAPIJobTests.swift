import Foundation
import HeraldCore
import HeraldEmulator
import HeraldServer
import Testing

/// Export and import jobs on the wire: `POST /{hub}/jobs` with a `NotificationHubJob` entry,
/// the job's state and progress, its files under `/{hub}/jobs`, and the Manage right.
@Suite struct HubAPIJobTests {
    static let hub = HubTestServer.hubName
    static let version = HubTestServer.apiVersion

    /// A `NotificationHubJob` entry as the SDKs post it.
    static func jobEntry(_ type: String, importFile: String? = nil) -> Data {
        let input = importFile.map { "<ImportFileUri>\(Atom.escaped($0))</ImportFileUri>" } ?? ""
        return Data(
            (#"<?xml version="1.0" encoding="utf-8"?><entry xmlns="http://www.w3.org/2005/Atom"><content type="application/xml">"#
                + #"<NotificationHubJob xmlns:i="http://www.w3.org/2001/XMLSchema-instance" xmlns="http://schemas.microsoft.com/netservices/2010/10/servicebus/connect">"#
                + "<Type>\(type)</Type><OutputContainerUri>https://example.blob.core.windows.net/out?sv=1</OutputContainerUri>\(input)"
                + "</NotificationHubJob></content></entry>").utf8
        )
    }

    /// Submits a job and waits until it has finished; its final entry's `NotificationHubJob`.
    static func runJob(
        _ server: HubTestServer, _ type: String, importFile: String? = nil, sourceLocation: SourceLocation = #_sourceLocation
    ) async throws -> WireXML {
        let submitted = try await server.wire(
            .POST, "/\(hub)/jobs?\(version)", headers: [("Content-Type", "application/atom+xml;type=entry;charset=utf-8")],
            body: jobEntry(type, importFile: importFile)
        )
        try #require(submitted.status == 201, "POST jobs: \(submitted.status) \(submitted.text)", sourceLocation: sourceLocation)
        let job = try #require(try submitted.xml().at("content", "NotificationHubJob"), sourceLocation: sourceLocation)
        #expect(job.value("Type") == type, sourceLocation: sourceLocation)
        #expect(["Started", "Running", "Completed"].contains(job.value("Status") ?? ""), sourceLocation: sourceLocation)
        let id = try #require(job.value("JobId"), sourceLocation: sourceLocation)
        #expect(submitted.header("Location")?.contains("/\(hub)/jobs/\(id)") == true, sourceLocation: sourceLocation)
        for _ in 0..<400 {
            let read = try await server.wire(.GET, "/\(hub)/jobs/\(id)?\(version)")
            try #require(read.status == 200, "GET jobs/\(id): \(read.status) \(read.text)", sourceLocation: sourceLocation)
            let current = try #require(try read.xml().at("content", "NotificationHubJob"), sourceLocation: sourceLocation)
            if ["Completed", "Failed"].contains(current.value("Status") ?? "") { return current }
            try await Task.sleep(for: .milliseconds(50))
        }
        throw TestFailure("job \(id) never finished")
    }

    /// `OutputProperties` as the JavaScript SDK reads them: `d3p1:KeyValueOfstringstring`
    /// pairs of `d3p1:Key` and `d3p1:Value`.
    static func outputProperties(_ job: WireXML) -> [String: String] {
        var properties: [String: String] = [:]
        for pair in job.child("OutputProperties")?.children("d3p1:KeyValueOfstringstring") ?? [] {
            if let key = pair.value("d3p1:Key") { properties[key] = pair.value("d3p1:Value") ?? "" }
        }
        return properties
    }

    /// A job's file, `Output.txt` or `Failed.txt`, through the URL its entry names.
    static func file(_ server: HubTestServer, of job: WireXML, _ property: String, sourceLocation: SourceLocation = #_sourceLocation) async throws -> String {
        let container = try #require(job.value("OutputContainerUri"), sourceLocation: sourceLocation)
        let path = try #require(Self.outputProperties(job)[property], "no \(property)", sourceLocation: sourceLocation)
        let response = try await server.wire(.GET, "\(container)/\(path)")
        try #require(response.status == 200, "GET \(path): \(response.status) \(response.text)", sourceLocation: sourceLocation)
        return response.text
    }

    @Test func anExportWritesEveryRegistrationAndAnImportReadsItBack() async throws {
        try await HubTestServer.withServer { server in
            var ids: [String] = []
            for index in 0..<3 {
                let token = server.herald.apns.registerDevice(topic: TestHerald.topic)
                let description =
                    Atom.open("AppleRegistrationDescription")
                    + "<Tags>export,n\(index)</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
                ids.append(try await server.createRegistration(description).id)
            }
            // A template whose body holds a line break still takes one line.
            let fcm = server.herald.fcm.registerDevice()
            let template =
                Atom.open("FcmV1TemplateRegistrationDescription")
                + "<Tags>export</Tags><FcmV1RegistrationId>\(fcm)</FcmV1RegistrationId><BodyTemplate><![CDATA[{\"message\":\n{\"data\":{\"m\":\"$(m)\"}}}]]></BodyTemplate><TemplateName>t</TemplateName></FcmV1TemplateRegistrationDescription>"
            ids.append(try await server.createRegistration(template).id)

            let export = try await Self.runJob(server, "ExportRegistrations")
            #expect(export.value("Status") == "Completed")
            #expect(export.value("Progress") == "100")
            #expect(export.value("OutputContainerUri") == "\(server.baseURL)/\(Self.hub)/jobs")
            let output = try await Self.file(server, of: export, "OutputFilePath")
            let lines = output.split(separator: "\n")
            #expect(lines.count == 4, "\(output)")
            for id in ids { #expect(lines.contains { $0.contains("<RegistrationId>\(id)</RegistrationId>") }) }
            #expect(try await Self.file(server, of: export, "FailedFilePath").isEmpty)

            // The export's output is an import's input as it is: delete everything it lists.
            let jobID = try #require(export.value("JobId"))
            let deleted = try await Self.runJob(server, "ImportDeleteRegistrations", importFile: "\(server.baseURL)/\(Self.hub)/jobs/\(jobID)/Output.txt")
            #expect(deleted.value("Status") == "Completed")
            for id in ids { #expect(try await server.wire(.GET, "/\(Self.hub)/registrations/\(id)?\(Self.version)").status == 404) }

            // Back again with an upsert of the same file: the same ids, the template intact.
            let restored = try await Self.runJob(
                server, "ImportUpsertRegistrations", importFile: "https://elsewhere.example/\(Self.hub)/jobs/\(jobID)/Output.txt")
            #expect(restored.value("Status") == "Completed")
            let entry = try await server.wire(.GET, "/\(Self.hub)/registrations/\(ids[3])?\(Self.version)")
            #expect(entry.status == 200)
            #expect(
                try entry.xml().at("content", "FcmV1TemplateRegistrationDescription")?.value("BodyTemplate") == "{\"message\":\n{\"data\":{\"m\":\"$(m)\"}}}")
        }
    }

    @Test func anImportAppliesGoodLinesAndListsTheBadOnesByNumber() async throws {
        try await HubTestServer.withServer { server in
            let tokens = (0..<2).map { _ in server.herald.apns.registerDevice(topic: TestHerald.topic) }
            let apple = { (token: String, tags: String) in
                Atom.open("AppleRegistrationDescription") + "<Tags>\(tags)</Tags><DeviceToken>\(token)</DeviceToken></AppleRegistrationDescription>"
            }
            let file =
                [
                    apple(tokens[0], "imported"),
                    "<AppleRegistrationDescription><Tags>x</Tags>",  // malformed
                    "",
                    Atom.open("AppleTemplateRegistrationDescription")
                        + "<DeviceToken>\(tokens[1])</DeviceToken><BodyTemplate><![CDATA[{\"aps\":{\"alert\":\"$(a\"}}]]></BodyTemplate></AppleTemplateRegistrationDescription>",
                    apple(tokens[1], "imported,second"),
                ].joined(separator: "\r\n") + "\n"
            let upload = try await server.wire(.PUT, "/\(Self.hub)/jobs/files/in.txt?\(Self.version)", body: Data(file.utf8))
            #expect(upload.status == 201, "\(upload.text)")
            let location = try #require(upload.header("Location"))

            let job = try await Self.runJob(server, "ImportCreateRegistrations", importFile: location)
            #expect(job.value("Status") == "Completed")
            #expect(job.value("ImportFileUri") == location)
            let properties = Self.outputProperties(job)
            #expect(properties["Succeeded"] == "2" && properties["Failed"] == "2", "\(properties)")
            let failures = try await Self.file(server, of: job, "FailedFilePath").split(separator: "\n")
            #expect(failures.count == 2)
            #expect(failures.first?.hasPrefix("line 2: ") == true, "\(failures)")
            #expect(failures.last?.hasPrefix("line 4: BodyTemplate: ") == true, "\(failures)")
            #expect(failures.last?.contains("$(a") == true)
            let output = try await Self.file(server, of: job, "OutputFilePath")
            #expect(output.hasPrefix("line 1: created "), "\(output)")
            #expect(output.contains("line 5: created "))

            let listed = try await server.wire(.GET, "/\(Self.hub)/tags/imported/registrations?\(Self.version)")
            #expect(try listed.xml().children("entry").count == 2)
            // The bad template changed nothing: the device has its good registration only.
            let second = try await server.wire(.GET, "/\(Self.hub)/registrations?$filter=DeviceToken+eq+%27\(tokens[1].uppercased())%27&\(Self.version)")
            #expect(try second.xml().children("entry").count == 1)

            // Again: nothing more is created.
            let again = try await Self.runJob(server, "ImportCreateRegistrations", importFile: location)
            #expect(try await Self.file(server, of: again, "OutputFilePath").contains("line 1: unchanged "))
            #expect(try await server.wire(.GET, "/\(Self.hub)/tags/imported/registrations?\(Self.version)").xml().children("entry").count == 2)

            // Both jobs are listed, newest first.
            let feed = try await server.wire(.GET, "/\(Self.hub)/jobs?\(Self.version)").xml()
            let listedIDs = feed.children("entry").compactMap { $0.at("content", "NotificationHubJob")?.value("JobId") }
            #expect(listedIDs == [again.value("JobId"), job.value("JobId")].compactMap { $0 })
        }
    }

    @Test func badJobsAndKeysWithoutManageAreRefused() async throws {
        try await HubTestServer.withServer { server in
            let post = { (body: Data, auth: WireAuth) in
                try await server.wire(.POST, "/\(Self.hub)/jobs?\(Self.version)", body: body, auth: auth)
            }
            expectHubError(try await post(Self.jobEntry("ExportRegistrations"), .listen), 403)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/jobs?\(Self.version)", auth: .listen), 403)
            expectHubError(try await server.wire(.PUT, "/\(Self.hub)/jobs/files/a.txt?\(Self.version)", body: Data("x".utf8), auth: .listen), 403)
            #expect(expectHubError(try await post(Self.jobEntry("ExportEverything"), .full), 400).contains("ImportUpsertRegistrations"))
            #expect(expectHubError(try await post(Self.jobEntry("ImportCreateRegistrations"), .full), 400).contains("ImportFileUri"))
            #expect(
                expectHubError(try await post(Self.jobEntry("ImportCreateRegistrations", importFile: "https://x.blob.core.windows.net/c/in.txt"), .full), 400)
                    .contains("jobs/files/{name}")
            )
            #expect(
                expectHubError(
                    try await post(Self.jobEntry("ImportCreateRegistrations", importFile: "\(server.baseURL)/\(Self.hub)/jobs/files/none.txt"), .full), 400
                )
                .contains("does not have")
            )
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/jobs/nosuchjob?\(Self.version)"), 404)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/jobs/nosuchjob/Output.txt?\(Self.version)"), 404)
            expectHubError(try await server.wire(.GET, "/\(Self.hub)/jobs/files/none.txt?\(Self.version)"), 404)
            expectHubError(try await server.wire(.PUT, "/\(Self.hub)/jobs/files/.hidden?\(Self.version)", body: Data("x".utf8)), 400)
        }
    }
}
