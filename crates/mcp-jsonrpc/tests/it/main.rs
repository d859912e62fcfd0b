mod decode_props;
