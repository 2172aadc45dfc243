package transport

// The subjects a role touches, for the server's per-user permissions
// (package transport/auth). They are derived from the functions that make
// the subjects, so a subject added here is confined the same way.

// HostPublishSubjects are the subjects only host may publish on: its batch
// streams (every CPU), its path uploads and its value records. A new per-host subject belongs
// here, so that a host's credentials reach it and no other host's do.
func HostPublishSubjects(host string) ([]string, error) {
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	paths, _ := PathSubject(host)
	values, _ := ValuesSubject(host)
	return []string{subjectPrefix + host + ".*", paths, values}, nil
}

// HostJetStreamAPI are the JetStream API requests host's agent makes:
// look up the batch and value streams and read the newest message of its
// own subjects (LastPublished, LastValues, on resume) by direct gets whose
// API subject names the message subject, so that no host reads another's
// (allowDirect); and the image buckets' lookups. Not the streams'
// message-get API, which names the subject in its body, nor stream or
// consumer creation, update, deletion or purge (EnsureStream makes the
// buckets). The subjects come from the functions that make the host's
// subjects, as HostPublishSubjects' do.
func HostJetStreamAPI(host string) ([]string, error) {
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	values, _ := ValuesSubject(host)
	subs := []string{
		"$JS.API.INFO",
		"$JS.API.STREAM.INFO." + StreamName,
		directLastBySubject(StreamName, subjectPrefix+host+".*"),
		"$JS.API.STREAM.INFO." + ValuesStreamName,
		directLastBySubject(ValuesStreamName, values),
	}
	for _, b := range []string{ImageBucket, ImageFileBucket} {
		obj := "OBJ_" + b
		subs = append(subs,
			"$JS.API.STREAM.INFO."+obj,
			"$JS.API.STREAM.MSG.GET."+obj,
			"$JS.API.DIRECT.GET."+obj, "$JS.API.DIRECT.GET."+obj+".>")
	}
	return subs, nil
}

// directLastBySubject is the API subject of a direct get of the newest
// message on subject (a pattern matches each of its subjects).
func directLastBySubject(stream, subject string) string {
	return "$JS.API.DIRECT.GET." + stream + "." + subject
}

// ImagePublishSubjects are the image buckets' chunk and metadata subjects
// (records and user programs' files), shared by every host: images are
// content-addressed and a host uploads only a name the bucket lacks
// (Publisher.sendImage, PutImageFile).
func ImagePublishSubjects() []string {
	var subs []string
	for _, b := range []string{ImageBucket, ImageFileBucket} {
		subs = append(subs, "$O."+b+".C.>", "$O."+b+".M.>")
	}
	return subs
}

// ImageReadAPI are the JetStream requests and replies that read objects of
// the image buckets (records and files), as the analysis tools do: look up,
// direct gets, and the ordered consumer an object's chunks come through.
func ImageReadAPI() []string {
	var subs []string
	for _, b := range []string{ImageBucket, ImageFileBucket} {
		obj := "OBJ_" + b
		subs = append(subs,
			"$JS.API.STREAM.INFO."+obj,
			"$JS.API.STREAM.MSG.GET."+obj,
			"$JS.API.DIRECT.GET."+obj, "$JS.API.DIRECT.GET."+obj+".>",
			"$JS.API.CONSUMER.CREATE."+obj, "$JS.API.CONSUMER.CREATE."+obj+".>",
			"$JS.API.CONSUMER.DELETE."+obj+".>", "$JS.API.CONSUMER.INFO."+obj+".>",
			"$JS.FC."+obj+".>")
	}
	return subs
}

// AggregatorJetStreamAPI are the JetStream requests an aggregator makes:
// its durable pull consumers on the batch, value and path streams (made,
// looked up, fetched from, acknowledged), the value and path streams'
// creation or update (EnsureValuesStream, EnsurePathStream: an aggregator
// may start before any coordinator), and reading the image buckets
// (ImageReadAPI). Not the batch stream's or the buckets' creation,
// update, deletion or purge, and no deletion or purge of any stream: the
// coordinator makes those (EnsureStream).
func AggregatorJetStreamAPI() []string {
	subs := []string{"$JS.API.INFO"}
	for _, s := range []string{StreamName, ValuesStreamName, PathStreamName} {
		subs = append(subs,
			"$JS.API.STREAM.INFO."+s,
			"$JS.API.CONSUMER.CREATE."+s, "$JS.API.CONSUMER.CREATE."+s+".>",
			"$JS.API.CONSUMER.DURABLE.CREATE."+s+".>",
			"$JS.API.CONSUMER.INFO."+s+".>",
			"$JS.API.CONSUMER.MSG.NEXT."+s+".>",
			"$JS.ACK."+s+".>")
	}
	for _, s := range []string{ValuesStreamName, PathStreamName} {
		subs = append(subs, "$JS.API.STREAM.CREATE."+s, "$JS.API.STREAM.UPDATE."+s)
	}
	return append(subs, ImageReadAPI()...)
}
