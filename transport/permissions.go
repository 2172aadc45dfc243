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
// the image buckets' lookups (stream information and the message get of
// an object's metadata: does the bucket hold it yet). Not the batch and
// value streams' reads (a resuming agent asks the coordinator for its
// streams' newest messages), no direct get anywhere (noDirectGets), nor
// any stream or consumer creation, update, deletion or purge
// (EnsureStream makes the buckets). The host is checked as for its
// other subjects, so a name no subject can carry gets none.
func HostJetStreamAPI(host string) ([]string, error) {
	if err := CheckHost(host); err != nil {
		return nil, err
	}
	subs := []string{"$JS.API.INFO"}
	for _, b := range []string{ImageBucket, ImageFileBucket} {
		obj := "OBJ_" + b
		subs = append(subs, "$JS.API.STREAM.INFO."+obj, "$JS.API.STREAM.MSG.GET."+obj)
	}
	return subs, nil
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
// the message get of an object's metadata, and the ordered consumer an
// object's chunks come through (no direct gets: noDirectGets).
func ImageReadAPI() []string {
	var subs []string
	for _, b := range []string{ImageBucket, ImageFileBucket} {
		obj := "OBJ_" + b
		subs = append(subs,
			"$JS.API.STREAM.INFO."+obj,
			"$JS.API.STREAM.MSG.GET."+obj,
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
