import StoreFormats

extension BackgroundWork {
    /// Work that decodes values as the caller would: the caller's display zone (`--tz`, a task
    /// local a new thread does not inherit) is bound on the thread besides its progress reporter.
    public convenience init(decodingAsCaller name: String, _ work: @escaping () -> Value) {
        let zone = DisplayZone.current
        self.init(name: name) { DisplayZone.$current.withValue(zone) { work() } }
    }
}
