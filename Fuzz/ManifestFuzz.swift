// libFuzzer entry point: the audit manifest parser (positioned JSON, then validation).
import Coexistence
import Foundation

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ start: UnsafeRawPointer?, _ count: Int) -> CInt {
    let data = start.map { Data(bytes: $0, count: count) } ?? Data()
    do {
        _ = try Manifest.parse(String(decoding: data, as: UTF8.self), path: "fuzz.json")
    } catch let error as ManifestError {
        _ = error.description
    } catch {
        preconditionFailure("Manifest.parse threw something other than ManifestError: \(error)")
    }
    return 0
}
