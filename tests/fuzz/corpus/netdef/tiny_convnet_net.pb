
tiny_convnet:
data
conv1_w
conv1_bconv1"Conv*

kernel*
pad
conv1conv1"Relu/
conv1pool1"MaxPool*

kernel*

stride
pool1
fc_w
fc_bpred"FC-
pred
labelsoftmaxloss"SoftmaxWithLoss$
softmax
labelaccuracy"Accuracy